/* stats_fields.h: every statistic of a Store, declared once (C and C++).
 *
 * Each X-macro row is X(name, doc). The gauges are computed when a snapshot is taken; the
 * counters are monotonic (CONFIG RESETSTAT / Store::ResetCounters set them to 0). larder::Stats,
 * the engine's counters, larder_stats_t of the C API, INFO larder and the Python binding are all
 * expanded from these lists: a new statistic is one row here plus the code that counts it. */
#ifndef LARDER_STATS_FIELDS_H_
#define LARDER_STATS_FIELDS_H_

#define LARDER_STAT_GAUGES(X)                                                             \
  X(keys, "entries (an expired one counts until maintenance removes it, as in DBSIZE)")   \
  X(live_bytes, "sum of the entries' value sizes")                                        \
  X(expiring_keys, "entries with a TTL (INFO keyspace's expires)")                        \
  X(avg_ttl, "mean ms left of the entries with a TTL (Redis's avg_ttl; 0: none)")         \
  X(disk_bytes, "bytes of the data directory's files (values, index, WAL)")               \
  X(value_file_bytes, "blob-file bytes on disk (padding included, freed ranges not)")     \
  X(index_file_bytes, "bytes of the index's SST and WAL files")                           \
  X(index_memory_bytes, "memory of the in-memory index (40-byte slots)")                  \
  X(pending_bytes, "bytes accepted, not yet on disk: index memtables, buffered values")   \
  X(max_disk_bytes, "the disk budget in force")                                           \
  X(budget_used_bytes,                                                                    \
    "bytes counted against max_disk_bytes: blob and index files, index memtables")        \
  X(unused_value_bytes,                                                                   \
    "blob-file bytes holding no live value (padding; replaced, deleted, expired values)") \
  X(generations, "generations (eviction windows) alive")                                  \
  X(index_writes_stopped,                                                                 \
    "1 while the index refuses writes after an error: a full disk or a failed write "     \
    "until the disk takes writes again (the next maintenance pass or Flush, SAVE, "       \
    "resumes it), a corruption or a rare WAL failure until a restart; else 0")            \
  X(first_write_demotion_percent,                                                         \
    "how far below the newest lru-reuse enters a first write, % of the store's lifetime " \
    "(learned from shadow caches; 0: as LRU)")

#define LARDER_STAT_COUNTERS(X)                                                       \
  X(hits, "Get/MultiGet lookups that returned a value")                               \
  X(misses, "Get/MultiGet lookups that returned NotFound")                            \
  X(reuses, "hits + Touch calls on live keys (what eviction counts)")                 \
  X(evicted_keys, "live entries dropped by eviction")                                 \
  X(evicted_bytes, "value bytes of the entries dropped by eviction")                  \
  X(demoted_keys,                                                                     \
    "first writes never read, evicted before their generation was the oldest "        \
    "(lru-reuse's learned demotion; counted in evicted_keys too)")                    \
  X(reinserted_keys, "entries kept by eviction (moved to a newer generation)")        \
  X(reinserted_bytes, "value bytes eviction copied to keep entries (none in place)")  \
  X(expired_keys, "entries removed because their TTL passed")                         \
  X(corruptions, "values that failed verification (served as misses)")                \
  X(failed_writes, "acknowledged values whose background write failed (key removed)") \
  X(bytes_read, "value bytes returned to callers")                                    \
  X(bytes_written, "value bytes accepted by Put (reinsertions not included)")

#define LARDER_STATS(X) LARDER_STAT_GAUGES(X) LARDER_STAT_COUNTERS(X)

#endif /* LARDER_STATS_FIELDS_H_ */
