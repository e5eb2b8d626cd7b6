#include "config/engine_options.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace larder::config {

larder::Options EngineOptions(const ServerConfig& c) {
  larder::Options o;
  o.max_disk_bytes = c.max_disk_bytes;
  larder::ParseEvictionPolicy(c.eviction_policy, &o.eviction_policy);  // an enum of the table
  o.keep_in_place = c.keep_in_place;
  o.max_reinsert_fraction = c.max_reinsert_fraction;
  o.generation_bytes = c.generation_bytes;
  o.wal = c.wal;
  o.sync_writes = c.wal_sync;
  o.memtable_bytes = c.memtable_bytes;
  o.write_buffer_bytes = c.write_buffer_bytes;
  o.direct_reads = c.direct_reads;
  o.mapped_reads = c.mapped_reads;
  o.direct_writes = c.direct_writes;
  o.read_queue_depth = static_cast<int>(c.read_queue_depth);
  o.maintenance_interval_ms = static_cast<uint32_t>(c.maintenance_interval_ms);
  o.flush_interval_ms = static_cast<uint32_t>(c.flush_interval_ms);
  o.max_key_bytes = static_cast<uint32_t>(c.max_key_bytes);
  o.evict_together = c.evict_together;
  // A value the protocol accepts must fit in the store.
  o.max_value_bytes = std::max<uint64_t>(o.max_value_bytes, c.proto_max_bulk_len);
  return o;
}

std::string InOptionTerms(std::string engine_message) {
  // The fields of EngineOptions above that the engine's messages name; each with its option.
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"max_disk_bytes", "max-disk-bytes"},      {"max_key_bytes", "max-key-bytes"},
      {"max_value_bytes", "proto-max-bulk-len"}, {"max_reinsert_fraction", "max-reinsert-fraction"},
      {"generation_bytes", "generation-bytes"},  {"memtable_bytes", "memtable-bytes"},
      {"read_queue_depth", "read-queue-depth"},
  };
  for (const auto& [field, option] : kNames) {
    for (size_t at = engine_message.find(field); at != std::string::npos;
         at = engine_message.find(field, at + option.size())) {
      engine_message.replace(at, field.size(), option);
    }
  }
  return engine_message;
}

}  // namespace larder::config
