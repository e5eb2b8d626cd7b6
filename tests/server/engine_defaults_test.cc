// The engine's defaults and the server's cannot drift apart: every server option that sets an
// engine option defaults to the engine's value (larder::Options), or differs for the reason
// its ServerConfig comment gives. (config_test ties the option table's default texts to
// ServerConfig and conf/larder.conf to the table, so a changed engine default fails there too
// until the texts follow.) And the engine's messages reach server users naming the options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "config/engine_options.h"
#include "config/option_table.h"
#include "larder/store.h"

namespace larder::config {
namespace {

TEST(EngineDefaults, ServerDefaultsAreTheEngineDefaults) {
  const larder::Options engine;
  const larder::Options server = EngineOptions(ServerConfig{});
  EXPECT_EQ(server.max_disk_bytes, engine.max_disk_bytes);
  EXPECT_EQ(server.generation_bytes, engine.generation_bytes);
  EXPECT_EQ(server.eviction_policy, engine.eviction_policy);
  EXPECT_EQ(server.max_reinsert_fraction, engine.max_reinsert_fraction);
  EXPECT_EQ(server.keep_in_place, engine.keep_in_place);
  EXPECT_EQ(server.wal, engine.wal);
  EXPECT_EQ(server.sync_writes, engine.sync_writes);
  EXPECT_EQ(server.memtable_bytes, engine.memtable_bytes);
  EXPECT_EQ(server.write_buffer_bytes, engine.write_buffer_bytes);
  EXPECT_EQ(server.direct_reads, engine.direct_reads);
  EXPECT_EQ(server.mapped_reads, engine.mapped_reads);
  EXPECT_EQ(server.direct_writes, engine.direct_writes);
  EXPECT_EQ(server.read_queue_depth, engine.read_queue_depth);
  EXPECT_EQ(server.max_key_bytes, engine.max_key_bytes);
  EXPECT_EQ(server.maintenance_interval_ms, engine.maintenance_interval_ms);
  EXPECT_EQ(server.flush_interval_ms, engine.flush_interval_ms);
  // max_value_bytes follows proto-max-bulk-len (Redis's 512mb) when that is larger.
  EXPECT_EQ(server.max_value_bytes, engine.max_value_bytes);
  // Not exposed by the server: the engine's own defaults.
  EXPECT_EQ(server.create_if_missing, engine.create_if_missing);
  EXPECT_EQ(server.tune_allocator, engine.tune_allocator);
  EXPECT_EQ(server.background_threads, engine.background_threads);
}

// The one server default that differs on purpose (server_config.h says why): LMCache's
// redis:// pairing, passed to the engine explicitly whatever the engine's own default is.
TEST(EngineDefaults, EvictTogetherIsTheServersOwnDefault) {
  const std::vector<std::pair<std::string, std::string>> lmcache{{"kv_bytes", "metadata"}};
  EXPECT_EQ(ServerConfig{}.evict_together, lmcache);
  EXPECT_EQ(EngineOptions(ServerConfig{}).evict_together, lmcache);
}

TEST(EngineDefaults, EveryMappedOptionReachesTheEngine) {
  ServerConfig c;
  c.max_disk_bytes = 1ull << 40;
  c.generation_bytes = 1ull << 30;
  c.eviction_policy = "fifo";
  c.max_reinsert_fraction = 0.25;
  c.keep_in_place = false;
  c.wal = c.wal_sync = true;
  c.memtable_bytes = 1ull << 29;
  c.write_buffer_bytes = 1ull << 28;
  c.direct_reads = true;
  c.mapped_reads = false;
  c.direct_writes = true;
  c.read_queue_depth = 3;
  c.max_key_bytes = 100;
  c.maintenance_interval_ms = 5;
  c.flush_interval_ms = 7;
  c.proto_max_bulk_len = 1ull << 30;
  c.evict_together = {{"a", "b"}, {"c", "d"}};
  const larder::Options o = EngineOptions(c);
  EXPECT_EQ(o.max_disk_bytes, 1ull << 40);
  EXPECT_EQ(o.generation_bytes, 1ull << 30);
  EXPECT_EQ(o.eviction_policy, larder::EvictionPolicy::kFifo);
  EXPECT_EQ(o.max_reinsert_fraction, 0.25);
  EXPECT_FALSE(o.keep_in_place);
  EXPECT_TRUE(o.wal);
  EXPECT_TRUE(o.sync_writes);
  EXPECT_EQ(o.memtable_bytes, 1ull << 29);
  EXPECT_EQ(o.write_buffer_bytes, 1ull << 28);
  EXPECT_TRUE(o.direct_reads);
  EXPECT_FALSE(o.mapped_reads);
  EXPECT_TRUE(o.direct_writes);
  EXPECT_EQ(o.read_queue_depth, 3);
  EXPECT_EQ(o.max_key_bytes, 100u);
  EXPECT_EQ(o.maintenance_interval_ms, 5u);
  EXPECT_EQ(o.flush_interval_ms, 7u);
  EXPECT_EQ(o.max_value_bytes, 1ull << 30);
  EXPECT_EQ(o.evict_together, c.evict_together);
}

// A refusal the engine words with its Options field reaches a server user naming the option.
TEST(EngineOptions, EngineMessagesNameTheServersOptions) {
  struct TempDir {
    const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                       ("larder-engine-options-" + std::to_string(::getpid()));
    TempDir() { std::filesystem::remove_all(path); }
    ~TempDir() { std::filesystem::remove_all(path); }
  } dir;
  ServerConfig c;
  c.max_key_bytes = 8;
  c.max_disk_bytes = 1ull << 30;
  {
    auto store = larder::Store::Open(EngineOptions(c), dir.path.string());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const larder::Status s = (*store)->Put("123456789", "v");
    ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_EQ(InOptionTerms(s.message()), "key of 9 bytes exceeds max-key-bytes (8)");
  }
  // Every name it puts in is an option of the table.
  const std::string named = InOptionTerms(
      "max_disk_bytes max_key_bytes max_value_bytes max_reinsert_fraction generation_bytes "
      "memtable_bytes read_queue_depth");
  std::istringstream words(named);
  for (std::string w; words >> w;) EXPECT_NE(FindOption(w), nullptr) << w;
  EXPECT_EQ(named.find('_'), std::string::npos) << named;
}

}  // namespace
}  // namespace larder::config
