// Eviction keeping entries in place: kept entries' records move, their bytes stay, the values
// dropped around them are freed inside the file (docs/architecture.md, "Eviction").
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "eviction_fixture.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"

namespace larder {
namespace {

using test::kMiB;
using test::MakeValue;
using Fixture = test::EvictionFixture;

// The blob files of generation `gen` in the store at `dir`, and the disk blocks they occupy.
struct GenFiles {
  int count = 0;
  uint64_t blocks_bytes = 0;
};
GenFiles FilesOfGeneration(const std::string& dir, uint64_t gen) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "gen-%016llx-", static_cast<unsigned long long>(gen));
  GenFiles out;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/values")) {
    if (e.path().filename().string().rfind(prefix, 0) != 0) continue;
    struct stat st {};
    if (::stat(e.path().c_str(), &st) != 0) continue;
    out.count++;
    out.blocks_bytes += static_cast<uint64_t>(st.st_blocks) * 512;
  }
  return out;
}

// The fixture's store closed and opened again with f.opts.
void Reopen(Fixture& f) {
  ASSERT_TRUE(f.store->Close().ok());
  f.store.reset();
  auto r = Store::Open(f.opts, f.dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  f.store = std::move(r).value();
}

// Reopened with the WAL on, whose generations have one blob file each, so that values written
// one after the other share a file.
void ReopenWithOneFilePerGeneration(Fixture& f) {
  f.opts.wal = true;
  Reopen(f);
}

// Four 1 MiB values fill a 4 MiB generation: keys 0-3 share its file. Keys 0 and 1 are read
// between every batch of writes, so they stay among the most recently used.
void WriteWhileReadingTheFirstTwo(Fixture& f, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    for (int i : {0, 1}) EXPECT_TRUE(f.Has(i)) << "reused entry " << i << " evicted";
    f.PutN(8 + round * 5, 8 + (round + 1) * 5);
  }
}

// Keys 0-7 written (one file per generation), then WriteWhileReadingTheFirstTwo. Returns the
// generation keys 0-3 were written to.
uint64_t FillThenReuseTheFirstTwo(Fixture& f, int rounds) {
  ReopenWithOneFilePerGeneration(f);
  f.PutN(0, 8);
  auto info = f.store->Info(Fixture::Key(0));
  EXPECT_TRUE(info.ok());
  WriteWhileReadingTheFirstTwo(f, rounds);
  return info.ok() ? info->generation : 0;
}

TEST(EvictionInPlace, AKeptEntryMovesToTheGenerationOfItsLastUse) {
  // Keys 0-3 fill generation A; key 0 is read while B, the next, is the head. When A goes, key
  // 0 stays (no value byte written) and its record moves to B, not to the newest generation:
  // used no more, it leaves with B, as LRU would drop it before what was written after.
  Fixture f(EvictionPolicy::kLruReuse);
  f.PutN(0, 5);  // keys 0-3 fill A, key 4 opens B
  auto b = f.store->Info(Fixture::Key(4));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(f.Has(0));
  int next = 5;
  auto write_while = [&](int key) {
    while (f.store->Contains(Fixture::Key(key)) && next < 100) f.PutN(next, next + 1), ++next;
  };
  write_while(1);  // until A is evicted
  auto info = f.store->Info(Fixture::Key(0));
  ASSERT_TRUE(info.ok()) << "an entry used since its generation closed was evicted";
  EXPECT_EQ(info->generation, b->generation);
  EXPECT_EQ(f.store->GetStats().reinserted_bytes, 0u);
  write_while(4);  // until B is evicted
  EXPECT_FALSE(f.store->Contains(Fixture::Key(0)));
  EXPECT_TRUE(f.store->Contains(Fixture::Key(next - 1)));
}

TEST(EvictionInPlace, AnExpirySetWhileEvictionKeepsTheEntryStands) {
  // Eviction walks the victim's records, then moves the kept ones one by one: an EXPIRE (or
  // PERSIST) acknowledged in between must not be undone by the walk's copy of the record.
  Fixture f(EvictionPolicy::kLruReuse);
  f.PutN(0, 5);  // keys 0-3 fill A, key 4 opens B
  EXPECT_TRUE(f.Has(0));
  const int64_t expire_at = f.store->NowMs() + 3'600'000;
  int moved = 0;
  testing::ScopedSyncPoint expire("StoreImpl::Reinsert", [&](void* key) {
    if (*static_cast<const std::string*>(key) != Fixture::Key(0) || moved++ > 0) return;
    EXPECT_TRUE(f.store->SetExpiry(Fixture::Key(0), expire_at).ok());
  });
  for (int next = 5; f.store->Contains(Fixture::Key(1)) && next < 100; ++next) {
    f.PutN(next, next + 1);  // until A is evicted
  }
  ASSERT_EQ(moved, 1) << "key 0 was not kept by the eviction of its generation";
  auto info = f.store->Info(Fixture::Key(0));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->expire_at_ms, expire_at) << "the eviction undid an acknowledged EXPIRE";
  ASSERT_NO_FATAL_FAILURE(Reopen(f));  // and its record says so too
  info = f.store->Info(Fixture::Key(0));
  ASSERT_TRUE(info.ok()) << info.status().ToString();
  EXPECT_EQ(info->expire_at_ms, expire_at);
}

TEST(EvictionInPlace, HitsCloseTheHeadAsWritesDo) {
  // A generation is a window of accesses: after a generation's worth of hits, the next write
  // closes the head, so entries read before and after are told apart. Where eviction ignores
  // reads (fifo), hits close nothing.
  for (EvictionPolicy p : {EvictionPolicy::kLruReuse, EvictionPolicy::kFifo}) {
    Fixture f(p);
    f.PutN(0, 2);
    const uint64_t before = f.store->GetStats().generations;
    for (int round = 0; round < 2; ++round) {
      for (int i : {0, 1}) EXPECT_TRUE(f.Has(i));
    }
    EXPECT_EQ(f.store->GetStats().generations, before) << "a read closed the head";
    f.PutN(2, 3);
    const uint64_t closed = p == EvictionPolicy::kFifo ? 0 : 1;
    EXPECT_EQ(f.store->GetStats().generations, before + closed) << EvictionPolicyName(p);
  }
}

TEST(EvictionInPlace, HitsCloseBoundedlyManyGenerations) {
  // Read far more than written (a small write after every generation's worth of hits), the
  // store never fills, so nothing evicts: hits stop closing the head at 4x the budget's
  // generations (here 4 x 8), and the column families stay bounded.
  Fixture f(EvictionPolicy::kLruReuse);
  f.PutN(0, 2);
  for (int round = 0; round < 60; ++round) {
    for (int i = 0; i < 3; ++i) {
      for (int k : {0, 1}) ASSERT_TRUE(f.Has(k));
    }
    ASSERT_TRUE(f.store->Put("small-" + std::to_string(round), "v").ok());
  }
  const Stats s = f.store->GetStats();
  EXPECT_EQ(s.evicted_keys, 0u);
  EXPECT_GE(s.generations, 30u);
  EXPECT_LE(s.generations, 33u);
}

TEST(EvictionInPlace, KeepsReusedEntriesWithoutCopyingThem) {
  Fixture f(EvictionPolicy::kLruReuse);
  const uint64_t first = FillThenReuseTheFirstTwo(f, 12);
  const Stats s = f.store->GetStats();
  EXPECT_GT(s.evicted_keys, 0u);
  EXPECT_GT(s.reinserted_keys, 0u);
  EXPECT_EQ(s.reinserted_bytes, 0u) << "a kept entry was copied";
  EXPECT_FALSE(f.store->Contains(Fixture::Key(2)));
  EXPECT_FALSE(f.store->Contains(Fixture::Key(9)));
  // The first generation is gone, but its file lives on for keys 0 and 1, with the blocks of
  // keys 2 and 3 freed.
  const GenFiles g1 = FilesOfGeneration(f.dir.path(), first);
  ASSERT_EQ(g1.count, 1);
  EXPECT_LE(g1.blocks_bytes, 2 * kMiB + 4096 * 2);
  // The blob files' blocks stay within the budget (the WAL's preallocated blocks aside).
  EXPECT_LE(test::DirBytes(f.dir.path() + "/values"), f.opts.max_disk_bytes);
}

TEST(EvictionInPlace, KeptEntriesSurviveAReopenAndTheirFileGoesWithTheLast) {
  Fixture f(EvictionPolicy::kLruReuse);
  const uint64_t first = FillThenReuseTheFirstTwo(f, 8);
  ASSERT_FALSE(f.store->Contains(Fixture::Key(2)));
  ASSERT_EQ(FilesOfGeneration(f.dir.path(), first).count, 1);
  Reopen(f);
  EXPECT_TRUE(f.Has(0));
  EXPECT_TRUE(f.Has(1));
  EXPECT_EQ(FilesOfGeneration(f.dir.path(), first).count, 1) << "a file records still name went";
  // No more reads: keys 0 and 1 age out, and the file with them.
  for (int i = 100; i < 160 && f.store->Contains(Fixture::Key(0)); ++i) f.PutN(i, i + 1);
  for (int i = 160; i < 220 && f.store->Contains(Fixture::Key(1)); ++i) f.PutN(i, i + 1);
  EXPECT_FALSE(f.store->Contains(Fixture::Key(0)));
  EXPECT_FALSE(f.store->Contains(Fixture::Key(1)));
  // Dropped in part, their ranges are freed at once; the file goes with the generation that
  // held their records, once a budget's worth of writes later every older generation went.
  EXPECT_LE(FilesOfGeneration(f.dir.path(), first).blocks_bytes, 4096u);
  f.PutN(220, 220 + 24);
  EXPECT_EQ(FilesOfGeneration(f.dir.path(), first).count, 0) << "a file nobody names stayed";
}

TEST(EvictionInPlace, AFileRangeKeepsItsBytesUntilItGoes) {
  // Key 2 is handed out as a file range, then evicted while key 0 keeps their file alive: its
  // range is freed only once the range's holder lets go, so what was verified is what a
  // sendfile of it sends.
  Fixture f(EvictionPolicy::kLruReuse);
  ReopenWithOneFilePerGeneration(f);
  f.PutN(0, 8);
  const uint64_t first = f.store->Info(Fixture::Key(0))->generation;  // keys 0-3, one file
  auto range = f.store->GetFileRange(Fixture::Key(2));
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  const std::string expected = MakeValue(Fixture::Key(2), kMiB);
  int i = 8;
  for (; i < 200 && (f.store->Contains(Fixture::Key(2)) || f.store->Contains(Fixture::Key(3)) ||
                     f.store->Contains(Fixture::Key(1)));
       ++i) {
    EXPECT_TRUE(f.Has(0));
    f.PutN(i, i + 1);
  }
  ASSERT_FALSE(f.store->Contains(Fixture::Key(2))) << "never evicted";
  ASSERT_TRUE(f.store->Contains(Fixture::Key(0)));
  // The hold keeps key 2's blocks only: those of keys 1 and 3, in the same file, went at once.
  EXPECT_LE(FilesOfGeneration(f.dir.path(), first).blocks_bytes, 2 * kMiB + 2 * 4096)
      << "values nobody reads waited for the held one";
  std::string got(range->size, '\0');
  ASSERT_EQ(::pread(range->fd, got.data(), got.size(), static_cast<off_t>(range->offset)),
            static_cast<ssize_t>(got.size()));
  EXPECT_TRUE(got == expected) << "the held range changed under its holder";
  const int fd = ::dup(range->fd);
  const uint64_t offset = range->offset;
  range->keepalive.reset();
  ASSERT_EQ(::pread(fd, got.data(), got.size(), static_cast<off_t>(offset)),
            static_cast<ssize_t>(got.size()));
  ::close(fd);
  EXPECT_TRUE(got == std::string(got.size(), '\0')) << "the evicted value's blocks were not freed";
  EXPECT_TRUE(f.Has(0));
}

TEST(EvictionInPlace, AnIdleWindowLosesTheTailsOfItsPrefixesFirst) {
  // A reader stops at the first missing chunk, so a prefix's tail is worth nothing without its
  // head. Keys 0-3 are a prefix whose lookup found nothing (LARDER.PREFIX before the store),
  // written in that order into generation A; the writes after them evict A a part at a time,
  // the deepest chunk first, where by write time the head would go first, or all four at once.
  Fixture f(EvictionPolicy::kLruReuse);
  std::vector<std::string> prefix;
  for (int i = 0; i < 4; ++i) prefix.push_back(Fixture::Key(i));
  ASSERT_EQ(f.store->PrefixCount({prefix.begin(), prefix.end()}), 0u);
  for (int i = 0; i < 4; ++i) {
    f.clock->Advance(1000);  // by use alone, key 0 would be the least recently used
    f.PutN(i, i + 1);
  }
  int next = 4;
  while (f.store->Contains(Fixture::Key(3)) && next < 100) f.PutN(next, next + 1), ++next;
  ASSERT_FALSE(f.store->Contains(Fixture::Key(3)));
  EXPECT_TRUE(f.store->Contains(Fixture::Key(0))) << "a prefix lost its head before its tail";
  EXPECT_EQ(f.store->PrefixCount({prefix.begin(), prefix.end()}), 3u);
}

TEST(EvictionInPlace, APrefixLookupMarksTheChunksPastItsGapUsed) {
  // LMCache looks a prefix up, reads the leading chunks found and stores the ones missing; the
  // chunks found past the first missing one belong to the same request, and once it stores that
  // one they serve the next turn. Keys 0-3 fill generation A and key 1 goes (a gap); while B is
  // the head, the lookup finds key 0 only, the request reads it and stores key 1 again. When A
  // is evicted, keys 2 and 3 stay with key 0 (moved to B, where they were last used): the whole
  // prefix is there. Not marked used by the lookup, they would have gone with A.
  Fixture f(EvictionPolicy::kLruReuse);
  std::vector<std::string> prefix;
  for (int i = 0; i < 4; ++i) prefix.push_back(Fixture::Key(i));
  f.PutN(0, 4);
  const uint64_t a = f.store->Info(Fixture::Key(2))->generation;
  ASSERT_TRUE(f.store->Delete(Fixture::Key(1)).ok());
  f.PutN(4, 6);
  ASSERT_NE(f.store->Info(Fixture::Key(4))->generation, a) << "A is still the head";
  ASSERT_EQ(f.store->PrefixCount({prefix.begin(), prefix.end()}), 1u);
  EXPECT_EQ(f.store->Info(Fixture::Key(2))->reuse_count, 0u) << "a lookup is not a reuse";
  ASSERT_TRUE(f.Has(0));
  f.PutN(1, 2);
  int next = 6;
  auto in_a = [&] {
    auto i = f.store->Info(Fixture::Key(2));
    return i.ok() && i->generation == a;
  };
  while (in_a() && next < 100) f.PutN(next, next + 1), ++next;
  ASSERT_FALSE(in_a()) << "generation A was never evicted";
  EXPECT_TRUE(f.store->Contains(Fixture::Key(2))) << "a chunk past the gap went with A";
  EXPECT_TRUE(f.store->Contains(Fixture::Key(3))) << "a chunk past the gap went with A";
  EXPECT_EQ(f.store->PrefixCount({prefix.begin(), prefix.end()}), 4u);
}

TEST(EvictionInPlace, TheBudgetCountsTheBlocksTheFilesOccupy) {
  // Ranges freed in part, then again around the kept entries when their generation goes, and
  // holes found at open, each count once: the budget's figure for the blob files is what they
  // occupy on disk.
  Fixture f(EvictionPolicy::kLruReuse);
  FillThenReuseTheFirstTwo(f, 12);
  auto blocks = [&] { return test::DirBytes(f.dir.path() + "/values"); };
  EXPECT_EQ(f.store->GetStats().value_file_bytes, blocks());
  Reopen(f);
  WriteWhileReadingTheFirstTwo(f, 6);
  EXPECT_EQ(f.store->GetStats().value_file_bytes, blocks());
}

TEST(EvictionInPlace, EntriesKeptBeforeARestartSurviveTheirFilesLastDrop) {
  // Eviction walks generation A in rounds, keeping keys 0 and 1 in place (their records move,
  // their bytes stay in A's file), and A stays the oldest for a while. A restart between two
  // rounds forgets what the earlier rounds kept; the round that finally drops A must still
  // leave their bytes in A's file (they are in the index) and free only the rest.
  for (bool wal : {true, false}) {
    Fixture f(EvictionPolicy::kLruReuse);
    ReopenWithOneFilePerGeneration(f);
    f.opts.wal = wal;
    f.PutN(0, 5);
    EXPECT_TRUE(f.Has(0));
    EXPECT_TRUE(f.Has(1));
    int next = 5;
    while (f.store->GetStats().evicted_keys == 0 && next < 100) f.PutN(next, next + 1), ++next;
    ASSERT_NO_FATAL_FAILURE(Reopen(f));
    for (int round = 0; round < 30; ++round, ++next) {
      for (int i : {0, 1, 2}) f.Has(i);
      f.PutN(next, next + 1);
    }
    EXPECT_TRUE(f.Has(0)) << "wal " << wal;
    EXPECT_TRUE(f.Has(1)) << "wal " << wal;
    EXPECT_EQ(f.store->GetStats().corruptions, 0u) << "wal " << wal;
  }
}

// The store of TheEntriesEvictionKeepsSurviveACrashAfterTheDrop, in the parent and its child:
// the fixture's, with the WAL off and no periodic pass (so no flush but the test's own).
Options CrashAfterDropOptions() {
  Options o;
  o.eviction_policy = EvictionPolicy::kLruReuse;
  o.max_disk_bytes = 24 * kMiB;
  o.generation_bytes = 4 * kMiB;
  o.memtable_bytes = 16 * kMiB;
  o.maintenance_interval_ms = 0;
  return o;
}
constexpr const char* kCrashAfterDropChild = "LARDER_CRASH_AFTER_DROP_CHILD";

// Its crash, in a re-executed child (test::ReexecSelf) entered before main(): keys 0-4 written
// and flushed, then 40 rounds of reading keys 0 and 1 and writing a new key (eviction keeps the
// two in place, moving their records, and drops the generations they were written in), then an
// exit without a flush or a close.
[[maybe_unused]] const bool kIsCrashAfterDropChild = [] {
  const char* dir = std::getenv(kCrashAfterDropChild);
  if (dir == nullptr) return false;
  auto r = Store::Open(CrashAfterDropOptions(), dir);
  if (!r.ok()) _exit(2);
  Store& s = **r;
  auto put = [&](int i) {
    if (!s.Put(Fixture::Key(i), MakeValue(Fixture::Key(i), kMiB)).ok()) _exit(3);
  };
  for (int i = 0; i < 5; ++i) put(i);
  if (!s.Get(Fixture::Key(0)).ok() || !s.Get(Fixture::Key(1)).ok()) _exit(4);
  if (!s.Flush().ok()) _exit(5);
  for (int i = 5; i < 45; ++i) {
    if (!s.Get(Fixture::Key(0)).ok() || !s.Get(Fixture::Key(1)).ok()) _exit(6);
    put(i);
  }
  if (s.GetStats().evicted_keys == 0) _exit(7);
  _exit(0);
}();

TEST(EvictionInPlace, TheEntriesEvictionKeepsSurviveACrashAfterTheDrop) {
  // With the WAL off a crash loses what was written since the last flush, and nothing before
  // it. Keys 0 and 1 were flushed; eviction then moved their records out of the generation it
  // dropped, and the drop is durable at once: the moved records must be too.
  test::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(test::RunReexecChild(kCrashAfterDropChild, dir.path()));
  auto r = Store::Open(CrashAfterDropOptions(), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int i : {0, 1}) {
    auto v = (*r)->Get(Fixture::Key(i));
    ASSERT_TRUE(v.ok()) << "flushed, kept by eviction, lost by the crash: " << Fixture::Key(i);
    EXPECT_EQ(v->view(), MakeValue(Fixture::Key(i), kMiB));
  }
  EXPECT_EQ((*r)->GetStats().corruptions, 0u);
}

constexpr const char* kCrashBeforePunchChild = "LARDER_CRASH_BEFORE_PUNCH_CHILD";

// The store of ARangeFreedByADropIsFreedAtOpenAfterACrashBeforeItsPunch: the WAL on (one blob
// file per generation, so that kept and dropped values share a file) and LRU without learned
// demotion (a generation whose values to drop are fewer than a round's goal goes whole).
Options CrashBeforePunchOptions() {
  Options o = CrashAfterDropOptions();
  o.wal = true;
  o.eviction_policy = EvictionPolicy::kLru;
  o.generation_bytes = 3 * kMiB + (32 << 10);  // keys 0-3 (see below) fill the first
  return o;
}

// Its crash, in a re-executed child: keys 0-4 written (key 3 of 64 KiB), then rounds of
// reading keys 0-2 and writing a new key, until a generation is dropped whole around the
// entries kept in place (key 3's range is to be freed): the child exits there, before the
// punch.
[[maybe_unused]] const bool kIsCrashBeforePunchChild = [] {
  const char* dir = std::getenv(kCrashBeforePunchChild);
  if (dir == nullptr) return false;
  auto r = Store::Open(CrashBeforePunchOptions(), dir);
  if (!r.ok()) _exit(2);
  Store& s = **r;
  testing::SetSyncPoint("StoreImpl::PunchAroundKept", [] { _exit(0); });
  for (int i = 0; i < 100; ++i) {
    for (int k = 0; k < 3 && i >= 5; ++k) {
      if (!s.Get(Fixture::Key(k)).ok()) _exit(4);
    }
    // Key 3 is small: the generation's values to drop are less than a round's goal.
    const size_t size = i == 3 ? 64 << 10 : kMiB;
    if (!s.Put(Fixture::Key(i), MakeValue(Fixture::Key(i), size)).ok()) _exit(3);
  }
  _exit(7);  // no whole drop
}();

TEST(EvictionInPlace, ARangeFreedByADropIsFreedAtOpenAfterACrashBeforeItsPunch) {
  test::TempDir dir;
  ASSERT_NO_FATAL_FAILURE(test::RunReexecChild(kCrashBeforePunchChild, dir.path()));
  auto r = Store::Open(CrashBeforePunchOptions(), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int k : {0, 1, 2}) EXPECT_TRUE((*r)->Contains(Fixture::Key(k)));
  EXPECT_FALSE((*r)->Contains(Fixture::Key(3)));
  // The first generation's file stays for keys 0-2, with key 3's range (whose record went with
  // the generation) freed at the open: its blocks are theirs and its header's.
  const GenFiles first = FilesOfGeneration(dir.path(), 1);
  ASSERT_EQ(first.count, 1);
  EXPECT_LE(first.blocks_bytes, 3 * kMiB + 4096) << "a range no record names kept its blocks";
  EXPECT_EQ((*r)->GetStats().value_file_bytes, test::DirBytes(dir.path() + "/values"));
}

}  // namespace
}  // namespace larder
