/* Uses the installed C API: put a value, read it back, compare. Exit status 0 on success. */
#include <larder/larder_c.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  char* err = NULL;
  larder_options_t* o = larder_options_create();
  larder_options_set_max_disk_bytes(o, 64u << 20);
  larder_t* db = larder_open(o, argv[1], &err);
  larder_options_destroy(o);
  if (!db) {
    fprintf(stderr, "open: %s\n", err);
    return 1;
  }
  static char value[100000];
  for (size_t i = 0; i < sizeof value; ++i) value[i] = (char)(i * 7);
  int rc = larder_put(db, "c-key", 5, value, sizeof value, 0, &err);
  larder_value_t* v = NULL;
  if (rc == LARDER_OK) rc = larder_get(db, "c-key", 5, &v, &err);
  int same = rc == LARDER_OK && larder_value_size(v) == sizeof value &&
             memcmp(larder_value_data(v), value, sizeof value) == 0;
  if (v) larder_value_free(v);
  if (rc != LARDER_OK) fprintf(stderr, "put/get: %d %s\n", rc, err ? err : "");
  if (larder_close(db, &err) != LARDER_OK) return 1;
  printf("c api: %s\n", same ? "ok" : "MISMATCH");
  return same ? 0 : 1;
}
