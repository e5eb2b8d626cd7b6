/* larder_c.h: the C API of liblarder, over the same functions as larder::Store.
 *
 * Conventions (RocksDB C API style): functions that can fail take `char** errptr`; on failure
 * they set *errptr to a malloc'd message (free it with larder_free) and return a negative
 * code; on success *errptr is left untouched. *errptr must be NULL or a message from this API
 * (it is freed before a new one is set); errptr itself may be NULL. No C++ exception crosses
 * this API. Keys and values are (pointer, length) pairs and may hold any bytes. Every other
 * pointer argument must be valid (non-NULL) unless a function says otherwise. Functions without
 * errptr cannot report a failure: on a closed store they answer as for an empty one (0
 * keys, -2 for a TTL, scan complete). */
#ifndef LARDER_C_H_
#define LARDER_C_H_

#include <stddef.h>
#include <stdint.h>

#include "larder/stats_fields.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct larder_t larder_t;
typedef struct larder_options_t larder_options_t;
typedef struct larder_value_t larder_value_t;

/* Return codes. */
#define LARDER_OK 0
#define LARDER_NOT_FOUND 1
#define LARDER_ERR_INVALID -1
#define LARDER_ERR_NO_SPACE -2
#define LARDER_ERR_CORRUPTION -3
#define LARDER_ERR_IO -4
#define LARDER_ERR_BUSY -5
#define LARDER_ERR_OTHER -6
#define LARDER_ERR_BUFFER_TOO_SMALL -7

larder_options_t* larder_options_create(void);
void larder_options_destroy(larder_options_t* o);
void larder_options_set_max_disk_bytes(larder_options_t* o, uint64_t v);
void larder_options_set_generation_bytes(larder_options_t* o, uint64_t v);
/* "lru-reuse", "lru", "fifo" or "none"; returns LARDER_ERR_INVALID for other names. */
int larder_options_set_eviction_policy(larder_options_t* o, const char* name);
void larder_options_set_wal(larder_options_t* o, int on);
/* Kept for ABI compatibility; does nothing (the page cache holds hot values). */
void larder_options_set_blob_cache_bytes(larder_options_t* o, uint64_t v);
/* Options::direct_reads, mapped_reads, direct_writes, read_queue_depth and sync_writes (see
   larder/options.h). */
void larder_options_set_direct_reads(larder_options_t* o, int on);
void larder_options_set_mapped_reads(larder_options_t* o, int on);
void larder_options_set_direct_writes(larder_options_t* o, int on);
void larder_options_set_read_queue_depth(larder_options_t* o, int depth);
void larder_options_set_sync_writes(larder_options_t* o, int on);
void larder_options_set_memtable_bytes(larder_options_t* o, uint64_t v);
/* Options::read_only: nothing in the directory changes; writes fail with LARDER_ERR_OTHER and
   a message saying so. */
void larder_options_set_read_only(larder_options_t* o, int on);

/* o may be NULL: Options' defaults (a budget of 80% of the filesystem's free space). */
larder_t* larder_open(const larder_options_t* o, const char* dir, char** errptr);
/* Flushes (WAL off) and closes; frees `db`. */
int larder_close(larder_t* db, char** errptr);

/* ttl_ms > 0 expires the key that many ms from now, 0 = no expiry; a negative ttl_ms, or one
 * past the clock's range, is LARDER_ERR_INVALID (nothing written). */
int larder_put(larder_t* db, const char* key, size_t klen, const char* val, size_t vlen,
               int64_t ttl_ms, char** errptr);
/* On LARDER_OK *out holds the verified value (no copy); release it with larder_value_free.
 * A miss returns LARDER_NOT_FOUND and leaves *out NULL. A key no put can store (empty, or
 * over max_key_bytes) is a miss here and in get_into, delete, expire and persist. */
int larder_get(larder_t* db, const char* key, size_t klen, larder_value_t** out, char** errptr);
const char* larder_value_data(const larder_value_t* v);
size_t larder_value_size(const larder_value_t* v);
void larder_value_free(larder_value_t* v);
/* Reads the verified value straight into buf (Store::GetInto: one read, no allocation).
 * *vlen gets the value size; LARDER_ERR_BUFFER_TOO_SMALL (buf untouched, *errptr naming both
 * sizes) if cap < size, *vlen then being the size a second lookup found (a concurrent writer
 * may have changed it). On other errors buf's contents are unspecified. */
int larder_get_into(larder_t* db, const char* key, size_t klen, void* buf, size_t cap, size_t* vlen,
                    char** errptr);
/* larder_get_into for n keys at once, the reads running in parallel (Store::MultiGetInto).
 * codes[i] and vlens[i] receive each key's result as larder_get_into would return it; the
 * function returns LARDER_OK unless the batch itself failed. */
int larder_multi_get_into(larder_t* db, size_t n, const char* const* keys, const size_t* klens,
                          void* const* bufs, const size_t* caps, size_t* vlens, int* codes,
                          char** errptr);

/* How many of the keys exist / how many leading keys exist. */
uint64_t larder_exists(larder_t* db, size_t n, const char* const* keys, const size_t* klens);
uint64_t larder_prefix_count(larder_t* db, size_t n, const char* const* keys, const size_t* klens);
uint64_t larder_touch(larder_t* db, size_t n, const char* const* keys, const size_t* klens);

int larder_delete(larder_t* db, const char* key, size_t klen, char** errptr);
/* ttl_ms <= 0 deletes the key, as Redis's EXPIRE; one past the clock's range is
 * LARDER_ERR_INVALID (nothing changed). */
int larder_expire(larder_t* db, const char* key, size_t klen, int64_t ttl_ms, char** errptr);
int larder_persist(larder_t* db, const char* key, size_t klen, char** errptr);
/* Remaining ms, -1 no expiry, -2 no key. */
int64_t larder_ttl(larder_t* db, const char* key, size_t klen);

/* One page of keys: calls fn(key, klen, arg) for each; returns the next cursor (0 = done). */
uint64_t larder_scan(larder_t* db, uint64_t cursor, const char* pattern, size_t count,
                     void (*fn)(const char* key, size_t klen, void* arg), void* arg);

/* The fields are declared in larder/stats_fields.h (the same as larder::Stats). */
typedef struct larder_stats_t {
#define LARDER_C_STATS_MEMBER(name, doc) uint64_t name;
  LARDER_STATS(LARDER_C_STATS_MEMBER)
#undef LARDER_C_STATS_MEMBER
} larder_stats_t;
void larder_stats(larder_t* db, larder_stats_t* out);

int larder_flush(larder_t* db, char** errptr);
/* Store::UnmapFiles: lets go of the value files' read mappings, so that posix_fadvise(DONTNEED)
   can drop their pages from the page cache. */
void larder_unmap_files(larder_t* db);
void larder_free(void* p);

#ifdef __cplusplus
}
#endif

#endif /* LARDER_C_H_ */
