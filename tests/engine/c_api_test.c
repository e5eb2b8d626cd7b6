/* The C API, compiled as C. Prints "N passed, N failed"; exits non-zero on any failure. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "larder/larder_c.h"

static int passed, failed;
#define CHECK(cond)                                                            \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
    }                                                                          \
  } while (0)

static void count_key(const char* k, size_t n, void* arg) {
  (void)k;
  (void)n;
  (*(int*)arg)++;
}

int main(int argc, char** argv) {
  char dir[] = "/tmp/larder-capi-XXXXXX";
  if (!mkdtemp(dir)) return 2;
  char* err = NULL;
  larder_options_t* o = larder_options_create();
  larder_options_set_max_disk_bytes(o, 1u << 30);
  larder_options_set_mapped_reads(o, 1);
  CHECK(larder_options_set_eviction_policy(o, "fifo") == LARDER_OK);
  CHECK(larder_options_set_eviction_policy(o, "bogus") == LARDER_ERR_INVALID);
  larder_t* db = larder_open(o, dir, &err);
  CHECK(db != NULL && err == NULL);
  if (!db) return 1;

  CHECK(larder_put(db, "a", 1, "hello", 5, 0, &err) == LARDER_OK);
  CHECK(larder_put(db, "", 0, "x", 1, 0, &err) == LARDER_ERR_INVALID);
  CHECK(err != NULL && strstr(err, "empty key") != NULL);
  larder_free(err);
  err = NULL;

  larder_value_t* v = NULL;
  CHECK(larder_get(db, "a", 1, &v, &err) == LARDER_OK);
  CHECK(v && larder_value_size(v) == 5 && memcmp(larder_value_data(v), "hello", 5) == 0);
  larder_value_free(v);
  CHECK(larder_get(db, "zz", 2, &v, &err) == LARDER_NOT_FOUND && v == NULL && err == NULL);

  char buf[8];
  size_t n = 0;
  CHECK(larder_get_into(db, "a", 1, buf, sizeof buf, &n, &err) == LARDER_OK && n == 5);
  CHECK(memcmp(buf, "hello", 5) == 0);
  CHECK(larder_get_into(db, "a", 1, buf, 2, &n, &err) == LARDER_ERR_BUFFER_TOO_SMALL && n == 5);
  CHECK(err != NULL && strstr(err, "smaller than the value") != NULL); /* says why */
  larder_free(err);
  err = NULL;

  const char* keys[] = {"a", "b", "a"};
  size_t lens[] = {1, 1, 1};
  CHECK(larder_exists(db, 3, keys, lens) == 2);
  CHECK(larder_prefix_count(db, 3, keys, lens) == 1);
  CHECK(larder_touch(db, 1, keys, lens) == 1);

  CHECK(larder_ttl(db, "a", 1) == -1);
  CHECK(larder_expire(db, "a", 1, 100000, &err) == LARDER_OK);
  CHECK(larder_ttl(db, "a", 1) > 90000);
  CHECK(larder_persist(db, "a", 1, &err) == LARDER_OK && larder_ttl(db, "a", 1) == -1);
  /* A ttl past the clock's range, or a negative one for a put, is refused, changing nothing. */
  CHECK(larder_expire(db, "a", 1, INT64_MAX, &err) == LARDER_ERR_INVALID && err != NULL);
  CHECK(larder_ttl(db, "a", 1) == -1);
  CHECK(larder_put(db, "h", 1, "v", 1, INT64_MAX, &err) == LARDER_ERR_INVALID);
  CHECK(larder_put(db, "h", 1, "v", 1, -5, &err) == LARDER_ERR_INVALID);
  CHECK(larder_ttl(db, "h", 1) == -2);
  larder_free(err);
  err = NULL;
  CHECK(larder_ttl(db, "q", 1) == -2);

  int seen = 0;
  CHECK(larder_scan(db, 0, "*", 100, count_key, &seen) == 0 && seen == 1);

  larder_stats_t st;
  larder_stats(db, &st);
  CHECK(st.keys == 1 && st.hits == 2 && st.misses == 1); /* too small: no read */

  CHECK(larder_delete(db, "a", 1, &err) == LARDER_OK);
  CHECK(larder_delete(db, "a", 1, &err) == LARDER_NOT_FOUND);
  CHECK(larder_flush(db, &err) == LARDER_OK);
  larder_unmap_files(db); /* any time: the next read maps again */
  CHECK(larder_close(db, &err) == LARDER_OK);

  /* Read-only: reads answer, writes fail saying why. */
  larder_options_set_read_only(o, 1);
  db = larder_open(o, dir, &err);
  CHECK(db != NULL && err == NULL);
  if (!db) return 1;
  CHECK(larder_get(db, "zz", 2, &v, &err) == LARDER_NOT_FOUND && err == NULL);
  CHECK(larder_put(db, "r", 1, "v", 1, 0, &err) == LARDER_ERR_OTHER);
  CHECK(err != NULL && strstr(err, "is open read-only") != NULL);
  larder_free(err);
  err = NULL;
  CHECK(larder_close(db, &err) == LARDER_OK);
  larder_options_destroy(o);

  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
  (void)argc;
  (void)argv;
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
