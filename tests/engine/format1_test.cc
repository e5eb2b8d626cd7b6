// A data directory written by the previous data format (format 1: values in RocksDB's blob
// files, metadata in a "meta" column family) opens without losing data: it is converted to
// format 2 in place (tests/engine/data/format1.tar.gz, made by the format-1 engine from the
// keys below).
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

// The generator's values: "<key>|" + an 8-digit counter + ";" repeated, cut to `size`.
std::string FixtureValue(const std::string& key, size_t size) {
  std::string out;
  for (int i = 0; out.size() < size; ++i) {
    char num[16];
    std::snprintf(num, sizeof(num), "%08d;", i);
    out += key + "|" + num;
  }
  return out.substr(0, size);
}

const std::map<std::string, size_t> kLive = {{"small-0", 0},
                                             {"small-1", 10},
                                             {"small-2", 1000},
                                             {"small-3", 16383},
                                             {"mid-0", 16384},
                                             {"mid-1", 65535},
                                             {"blob-0", 65536},
                                             {"blob-1", 262144},
                                             {"blob-2", 1 << 20},
                                             {"blob-3", (1 << 20) + 17},
                                             {"blob-4", 3 << 20},
                                             {"vllm@llama@0@kv_bytes", 512 * 1024},
                                             {"vllm@llama@0@metadata", 120}};

std::vector<std::string> ColumnFamilies(const std::string& dir) {
  std::vector<std::string> names;
  EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir, &names).ok());
  return names;
}

TEST(Format1, ConvertedAtOpenWithEveryLiveValue) {
  test::TempDir tmp;
  const std::string cmd = "tar xzf " LARDER_TEST_DATA_DIR "/format1.tar.gz -C " + tmp.path();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string dir = tmp.sub("data");
  auto names = ColumnFamilies(dir);
  ASSERT_NE(std::find(names.begin(), names.end(), "meta"), names.end()) << "not a format-1 dir";

  for (int open = 0; open < 2; ++open) {  // converted, then opened as format 2
    Options o;
    o.maintenance_interval_ms = 0;
    o.max_disk_bytes = 1ull << 30;
    auto r = Store::Open(o, dir);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    for (const auto& [key, size] : kLive) {
      auto v = s.Get(key);
      ASSERT_TRUE(v.ok()) << key << ": " << v.status().ToString();
      EXPECT_EQ(v->view(), FixtureValue(key, size)) << key;
    }
    auto v = s.Get("overwritten");
    ASSERT_TRUE(v.ok());
    EXPECT_EQ(v->view(), FixtureValue("overwritten", 90000));
    EXPECT_GT(s.Ttl("ttl-long"), int64_t{10} * 365 * 86400 * 1000);
    EXPECT_EQ(s.Ttl("ttl-short"), kTtlNoKey) << "expired long ago";
    EXPECT_EQ(s.Ttl("deleted"), kTtlNoKey);
    Stats st = s.GetStats();
    EXPECT_EQ(st.keys, kLive.size() + 2);
    EXPECT_EQ(st.corruptions, 0u);
    ASSERT_TRUE(s.Close().ok());
    names = ColumnFamilies(dir);
    for (const auto& n : names) {
      EXPECT_TRUE(n == "default" || n.starts_with("idx-")) << "format-1 column family left: " << n;
    }
  }
  auto report = Verify(dir);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_TRUE(report->clean());
  EXPECT_EQ(report->ok, kLive.size() + 2);
}

}  // namespace
}  // namespace larder
