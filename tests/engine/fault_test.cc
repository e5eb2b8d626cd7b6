// RocksDB refusing writes (fault injection through its FileSystem, failing_fs.h): a Put gives
// the space of its value back; DEL, EXPIRE and eviction report the error and change nothing, so
// that no key comes back after a restart that the store said was gone, and none goes that it
// said was kept; a damaged value whose removal is refused is logged as not removed. And the
// index's info log on a disk that refuses its writes. How the index stops and resumes its writes
// after such errors: index_resume_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "blob_file.h"
#include "failing_fs.h"
#include "info_log.h"
#include "larder/events.h"
#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

using test::Faults;
using test::MakeValue;

TEST_F(Faults, RefusedIndexWritesChangeNothingAndNothingComesBack) {
  o_.wal = true;  // a DEL or an EXPIRE reaches the disk when it is acknowledged
  o_.generation_bytes = 4 << 20;
  {
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    Store& s = **r;
    for (int i = 0; i < 12; ++i) {
      std::string k = "k" + std::to_string(i);
      ASSERT_TRUE(s.Put(k, MakeValue(k, 1 << 20)).ok());
    }
    ASSERT_TRUE(s.Delete("k0").ok());  // before the fault: gone for good
    fs_->failing = true;
    Status del = s.Delete("k1");
    EXPECT_FALSE(del.ok()) << "DEL answered OK though its delete never reached the disk";
    EXPECT_TRUE(s.Contains("k1"));
    Status exp = s.SetExpiry("k2", 1);  // in the past: deletes
    EXPECT_FALSE(exp.ok());
    Status ttl = s.SetExpiry("k3", SystemClock()->NowMs() + 60000);
    EXPECT_FALSE(ttl.ok());
    EXPECT_EQ(s.Ttl("k3"), kTtlNoExpiry);
    Status ev = s.EvictTo(0);
    EXPECT_FALSE(ev.ok()) << "eviction answered OK though its drop never reached the disk";
    for (int i = 1; i < 12; ++i) EXPECT_TRUE(s.Contains("k" + std::to_string(i))) << i;
    fs_->failing = false;
    s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
  }
  auto r = Store::Open(o_, dir_.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  EXPECT_FALSE(s.Contains("k0")) << "a key deleted before the fault came back";
  for (int i = 1; i < 12; ++i) {
    std::string k = "k" + std::to_string(i);
    auto v = s.Get(k);
    ASSERT_TRUE(v.ok()) << k << ": " << v.status().ToString();
    EXPECT_EQ(v->view(), MakeValue(k, 1 << 20)) << k;
  }
  EXPECT_EQ(s.Ttl("k3"), kTtlNoExpiry);
  EXPECT_EQ(s.GetStats().corruptions, 0u);
}

TEST_F(Faults, AValueWhoseIndexWriteIsRefusedGivesItsSpaceBack) {
  o_.wal = true;  // the record's write fails with the Put
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  if (!BlobFile::CanPunchHoles(dir_.path() + "/values")) GTEST_SKIP() << "no hole punching here";
  Store& s = **r;
  ASSERT_TRUE(s.Put("kept", MakeValue("kept", 1 << 20)).ok());
  const uint64_t before = s.GetStats().budget_used_bytes;
  fs_->failing = true;
  for (int i = 0; i < 8; ++i) {
    const std::string k = "refused" + std::to_string(i);
    EXPECT_FALSE(s.Put(k, MakeValue(k, 4 << 20)).ok()) << k;
  }
  // 32 MiB of values appended to the blob file and never indexed: freed at once, as a replaced
  // version is (before, they stayed counted until their generation went).
  EXPECT_LT(s.GetStats().budget_used_bytes, before + (4 << 20))
      << "before " << before << ", after " << s.GetStats().budget_used_bytes;
  fs_->failing = false;
  EXPECT_EQ(s.Get("kept")->view(), MakeValue("kept", 1 << 20));
  s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
}

// A StagedPuts commit writes its keys' records in one index write: all of them, or none when
// that write is refused, and a reopen finds the same.
class StagedCommitFaults : public Faults {
 protected:
  void SetUp() override {
    o_.wal = true;  // each index write is a WAL append, made when the commit returns
    auto r = Open();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
    for (const char* k : kKeys) ASSERT_TRUE(store_->Put(k, MakeValue(k, 1 << 20)).ok());
    staged_ = store_->StagePuts();
    for (const char* k : kKeys) {
      ASSERT_TRUE(staged_->Stage(k, MakeValue(std::string("new ") + k, 2 << 20), {}).ok());
    }
  }

  // How many of the keys have their staged value; the others must have their first one.
  int NewValues(Store& s) {
    int found = 0;
    for (const char* k : kKeys) {
      Result<Value> v = s.Get(k);
      if (!v.ok()) {
        ADD_FAILURE() << k << ": " << v.status().ToString();
      } else if (v->view() == MakeValue(std::string("new ") + k, 2 << 20)) {
        found++;
      } else {
        EXPECT_EQ(v->view(), MakeValue(k, 1 << 20)) << k;
      }
    }
    return found;
  }

  int NewValuesAfterReopen() {
    staged_.reset();
    store_->Close().PermitUncheckedError();  // RocksDB may keep reporting an earlier failure
    store_.reset();
    auto r = Store::Open(o_, dir_.path());
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? NewValues(**r) : -1;
  }

  static constexpr const char* kKeys[] = {"a", "b", "c", "d"};
  std::unique_ptr<Store> store_;
  std::unique_ptr<StagedPuts> staged_;
};

TEST_F(StagedCommitFaults, ARefusedCommitChangesNoKey) {
  const uint64_t staged_bytes = store_->GetStats().budget_used_bytes;
  fs_->failing = true;
  EXPECT_FALSE(staged_->Commit().ok());
  EXPECT_EQ(staged_->size(), 0u);
  fs_->failing = false;
  EXPECT_EQ(NewValues(*store_), 0);
  if (BlobFile::CanPunchHoles(dir_.path() + "/values")) {
    EXPECT_LE(store_->GetStats().budget_used_bytes + 8 * (1 << 20), staged_bytes)
        << "the staged values' space was kept";
  }
  EXPECT_EQ(NewValuesAfterReopen(), 0);
}

// One WAL append goes through, then the disk refuses: a commit made of one index write per key
// would set the first key and fail.
TEST_F(StagedCommitFaults, ACommitIsOneIndexWrite) {
  fs_->appends_left = 1;
  Status s = staged_->Commit();
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(NewValues(*store_), 4);
  EXPECT_EQ(NewValuesAfterReopen(), 4);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Counts EventListener::OnCorruptValue calls.
struct CorruptValueCounter final : EventListener {
  void OnCorruptValue(std::string_view, std::string_view) override { ++calls; }
  std::atomic<int> calls{0};
};

TEST_F(Faults, ADamagedValueWhoseRemovalIsRefusedIsLoggedAsNotRemoved) {
  auto counter = std::make_shared<CorruptValueCounter>();
  o_.wal = true;  // the removal's index write fails at once
  o_.listener = counter;
  auto r = Open();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  ASSERT_TRUE(s.Put("v", MakeValue("v", 1 << 20)).ok());
  ASSERT_TRUE(s.Flush().ok());
  test::DamageBlobFileTails(dir_.path());
  fs_->failing = true;
  for (uint64_t read = 1; read <= 2; ++read) {
    EXPECT_TRUE(s.Get("v").status().IsNotFound());  // never the damaged bytes
    EXPECT_EQ(s.GetStats().corruptions, read);
    EXPECT_TRUE(s.Contains("v"));  // the removal was refused: the next read finds it again
  }
  EXPECT_EQ(counter->calls, 0) << "told of a removal that did not happen";
  const std::string log = ReadFile(dir_.path() + "/LOG");
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "failed verification: checksum mismatch (gen-"), 2)
      << log;
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "removing it failed"), 2) << log;
  EXPECT_EQ(test::LogLinesWith(dir_.path(), "was removed"), 0) << log;
  fs_->failing = false;
  s.Close().PermitUncheckedError();  // RocksDB may keep reporting the earlier failure
}

// RocksDB's own file logger asserts (Debian's build keeps assertions) on the line after a log
// write failed, so a full disk aborted the process. The store's log drops what it cannot write.
TEST(InfoLogTest, LinesTheDiskRefusesAreDroppedAndLoggingGoesOn) {
  InfoLog log("/dev/full", rocksdb::InfoLogLevel::WARN_LEVEL);  // every write: ENOSPC
  for (int i = 0; i < 1000; ++i) rocksdb::Warn(&log, "flush failed: %d", i);
  EXPECT_EQ(log.GetLogFileSize(), 0u);
}

TEST(InfoLogTest, WritesWarningsWholeLinesAndRotates) {
  test::TempDir dir;
  const std::string path = dir.sub("LOG");
  {
    InfoLog log(path, rocksdb::InfoLogLevel::WARN_LEVEL);
    rocksdb::Info(&log, "below the level");
    rocksdb::Warn(&log, "no space left: %s", "values/gen-1.lbv");
    rocksdb::Error(&log, "%s", std::string(10000, 'x').c_str());  // cut to one line
  }
  const std::string text = ReadFile(path);
  EXPECT_EQ(text.find("below the level"), std::string::npos);
  EXPECT_NE(text.find("[WARN] no space left: values/gen-1.lbv\n"), std::string::npos) << text;
  ASSERT_EQ(std::count(text.begin(), text.end(), '\n'), 2) << text;
  EXPECT_LE(text.size() - text.find('\n') - 1, 4096u);

  InfoLog log(path, rocksdb::InfoLogLevel::WARN_LEVEL);  // appends to the existing file
  EXPECT_EQ(log.GetLogFileSize(), text.size());
  const std::string line(1000, 'y');
  while (!std::filesystem::exists(path + ".old")) rocksdb::Warn(&log, "%s", line.c_str());
  EXPECT_GT(std::filesystem::file_size(path + ".old"), InfoLog::kMaxBytes - 2048);
  EXPECT_LE(std::filesystem::file_size(path + ".old"), InfoLog::kMaxBytes);
  EXPECT_LT(std::filesystem::file_size(path), 2048u);
}

}  // namespace
}  // namespace larder
