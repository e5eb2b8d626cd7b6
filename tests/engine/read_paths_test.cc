// The read paths into caller memory: GetInto, MultiGetInto, OpenValue (streamed, verified at
// Finish), direct reads, reads through the files' mappings, values on both sides of the
// inline/blob boundary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "file_mapping.h"
#include "format.h"
#include "guarded_read.h"
#include "larder/store.h"
#include "sync_point.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;
namespace fs = std::filesystem;

class ReadPathsTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    opts_.maintenance_interval_ms = 0;
    opts_.max_disk_bytes = 1ull << 30;
    auto r = Store::Open(opts_, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
  }
  // Flips one byte near the end of the last value in each blob file.
  void DamageBlobFiles() { test::DamageBlobFileTails(dir_.path()); }

  // Reads all of the value `r` opened and checks that it is `want`, verified.
  static void ExpectReadWhole(Result<std::unique_ptr<ValueReader>>& r, const std::string& want) {
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::string got(want.size(), '\0');
    ASSERT_TRUE((*r)->Read(got.data(), got.size()).ok());
    EXPECT_TRUE((*r)->Finish().ok());
    EXPECT_TRUE(got == want) << "not the version the reader found";
  }

  test::TempDir dir_;
  Options opts_;
  std::unique_ptr<Store> store_;
};

constexpr size_t kSizes[] = {0,     1,       100,           16383,   16384,          16385,
                             65536, 1 << 18, (1 << 18) + 1, 1 << 20, (1 << 20) + 17, 5 << 20};

TEST(ChecksumStreamTest, PiecesHashLikeTheWhole) {
  const std::string v = MakeValue("stream", (1 << 20) + 333);
  for (size_t piece : {size_t{1}, size_t{63}, size_t{4096}, size_t{262144}, v.size()}) {
    format::ChecksumStream s;
    for (size_t at = 0; at < v.size(); at += piece) {
      s.Update(v.data() + at, std::min(piece, v.size() - at));
    }
    EXPECT_EQ(s.Digest(), format::Checksum(v)) << "pieces of " << piece;
  }
  EXPECT_EQ(format::ChecksumStream().Digest(), format::Checksum(nullptr, 0));
}

TEST_F(ReadPathsTest, GetIntoReadsExactBytesAcrossTheInlineBlobBoundary) {
  for (size_t size : kSizes) {
    std::string k = "k" + std::to_string(size);
    ASSERT_TRUE(store_->Put(k, MakeValue(k, size)).ok()) << size;
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t size : kSizes) {
      std::string k = "k" + std::to_string(size);
      std::string buf(size + 10, '#');
      auto n = store_->GetInto(k, buf.data(), buf.size());
      ASSERT_TRUE(n.ok()) << n.status().ToString();
      EXPECT_EQ(*n, size);
      EXPECT_EQ(buf.substr(0, size), MakeValue(k, size)) << size;
      EXPECT_EQ(buf.substr(size), std::string(10, '#')) << "wrote past the value";
    }
    Reopen();  // the same from disk
  }
  std::string small(4, '#');
  auto r = store_->GetInto("k100", small.data(), small.size());
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status().ToString();
  EXPECT_EQ(small, "####") << "a too-small buffer must stay untouched";
  EXPECT_TRUE(store_->GetInto("absent", small.data(), small.size()).status().IsNotFound());
}

TEST_F(ReadPathsTest, MultiGetIntoAnswersEachKeyInOrder) {
  std::vector<std::string> keys;
  for (int i = 0; i < 40; ++i) {
    keys.push_back("m" + std::to_string(i));
    if (i % 5 == 3) continue;  // absent
    ASSERT_TRUE(store_->Put(keys.back(), MakeValue(keys.back(), 300000 + i)).ok());
  }
  std::vector<std::string> bufs(keys.size(), std::string(400000, '\0'));
  std::vector<std::string_view> kv(keys.begin(), keys.end());
  std::vector<Store::Buffer> b;
  for (auto& s : bufs) b.push_back({s.data(), s.size()});
  auto rs = store_->MultiGetInto(kv, b);
  ASSERT_EQ(rs.size(), keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i % 5 == 3) {
      EXPECT_TRUE(rs[i].status().IsNotFound()) << i;
      continue;
    }
    ASSERT_TRUE(rs[i].ok()) << i << rs[i].status().ToString();
    ASSERT_EQ(*rs[i], 300000 + i);
    EXPECT_EQ(bufs[i].substr(0, *rs[i]), MakeValue(keys[i], 300000 + i)) << i;
  }
  EXPECT_EQ(store_->GetStats().misses, 8u);
}

TEST_F(ReadPathsTest, OpenValueStreamsPiecesAndVerifiesAtFinish) {
  const size_t size = (3 << 20) + 5;
  ASSERT_TRUE(store_->Put("v", MakeValue("v", size)).ok());
  ASSERT_TRUE(store_->Put("small", "tiny").ok());
  auto r = store_->OpenValue("v");
  ASSERT_TRUE(r.ok());
  ValueReader& vr = **r;
  EXPECT_EQ(vr.size(), size);
  std::string got;
  std::string piece(1 << 20, '\0');
  while (vr.remaining() > 0) {
    size_t n = std::min<uint64_t>(piece.size(), vr.remaining());
    ASSERT_TRUE(vr.Read(piece.data(), n).ok());
    got.append(piece.data(), n);
  }
  EXPECT_TRUE(vr.Finish().ok());
  EXPECT_EQ(got, MakeValue("v", size));
  auto s = store_->OpenValue("small");
  ASSERT_TRUE(s.ok());
  char buf[4];
  ASSERT_TRUE((*s)->Read(buf, 4).ok());
  EXPECT_TRUE((*s)->Finish().ok());
  EXPECT_EQ(std::string(buf, 4), "tiny");
  EXPECT_TRUE(store_->OpenValue("absent").status().IsNotFound());
  EXPECT_EQ(store_->GetStats().hits, 2u);
}

TEST_F(ReadPathsTest, DamagedValueFailsAtFinishAndIsRemoved) {
  const size_t size = 2 << 20;
  ASSERT_TRUE(store_->Put("v", MakeValue("v", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  DamageBlobFiles();
  auto r = store_->OpenValue("v");
  ASSERT_TRUE(r.ok());
  std::string buf(size, '\0');
  ASSERT_TRUE((*r)->Read(buf.data(), size / 2).ok());  // the first half is intact...
  ASSERT_TRUE((*r)->Read(buf.data() + size / 2, size / 2).ok());
  Status fin = (*r)->Finish();  // ...but the whole is not: the caller must not deliver it
  EXPECT_TRUE(fin.IsCorruption()) << fin.ToString();
  EXPECT_EQ(store_->GetStats().corruptions, 1u);
  EXPECT_FALSE(store_->Contains("v"));
  EXPECT_TRUE(store_->Get("v").status().IsNotFound());
}

TEST_F(ReadPathsTest, FinishAfterAFailedReadFailsAtOnceAndRemovesTheValue) {
  const size_t size = 2 << 20;
  ASSERT_TRUE(store_->Put("v", MakeValue("v", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  auto r = store_->OpenValue("v");
  ASSERT_TRUE(r.ok());
  for (auto& e : fs::directory_iterator(fs::path(dir_.path()) / "values")) {
    fs::resize_file(e.path(), fs::file_size(e.path()) - size / 2);  // the second half is gone
  }
  std::string buf(size, '\0');
  ASSERT_TRUE((*r)->Read(buf.data(), size / 4).ok());
  Status failed = (*r)->Read(buf.data() + size / 4, size / 2);
  EXPECT_FALSE(failed.ok());
  EXPECT_GT((*r)->remaining(), 0u);
  Status fin = (*r)->Finish();  // not InvalidArgument: the read is over, and failed
  EXPECT_TRUE(fin.IsCorruption()) << fin.ToString();
  // Why: the read's failure (not a checksum mismatch), and where the value lay.
  EXPECT_TRUE(fin.message().starts_with(failed.message() + " (gen-")) << fin.ToString();
  EXPECT_EQ(store_->GetStats().corruptions, 1u);
  EXPECT_FALSE(store_->Contains("v"));
}

// What an open reader has found stays readable: a replacement punches the old range only once
// the reader lets go.
TEST_F(ReadPathsTest, AValueReplacedWhileOpenIsStillReadWhole) {
  const size_t size = 1 << 20;
  const std::string v1 = MakeValue("v1", size);
  ASSERT_TRUE(store_->Put("k", v1).ok());
  ASSERT_TRUE(store_->Flush().ok());
  auto r = store_->OpenValue("k");
  ASSERT_TRUE(store_->Put("k", MakeValue("v2", size)).ok());
  ExpectReadWhole(r, v1);
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
}

// A value handed over with PutOwned waits in memory for its write (about 20 ms), and a
// replacement drops that write: a reader opened before must still read the value it found.
TEST_F(ReadPathsTest, AValueStillWaitingForItsWriteIsReadWholeThoughAReplacementDropsIt) {
  const size_t size = 1 << 20;
  const std::string v1 = MakeValue("v1", size);
  ASSERT_TRUE(store_->PutOwned("k", std::string(v1), {}).ok());
  auto r = store_->OpenValue("k");
  ASSERT_TRUE(store_->PutOwned("k", MakeValue("v2", size), {}).ok());
  ASSERT_TRUE(store_->Flush().ok());
  ExpectReadWhole(r, v1);
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
}

// A replacement between a read's lookup and its hold on the range (which the replacement may
// punch at once): OpenValue and GetFileRange look again and read the new version whole, where
// they would otherwise read the hole, fail the check and answer a miss for a key that exists.
TEST_F(ReadPathsTest, AValueReplacedBetweenTheLookupAndTheHoldIsLookedUpAgain) {
  const size_t size = 256 << 10;
  int version = 0;
  auto value = [&](int v) { return MakeValue("k" + std::to_string(v), size); };
  ASSERT_TRUE(store_->Put("k", value(version)).ok());
  bool replace = true;
  testing::ScopedSyncPoint replacing("LookupHeld:BeforeHold", [&] {
    if (replace) {
      EXPECT_TRUE(store_->Put("k", value(++version)).ok());
    }
    replace = false;
  });
  auto r = store_->OpenValue("k");
  ExpectReadWhole(r, value(1));
  if (r.ok()) r->reset();  // lets go of the hold
  replace = true;
  auto range = store_->GetFileRange("k");
  ASSERT_TRUE(range.ok()) << range.status().ToString();
  std::string got(size, '\0');
  ASSERT_EQ(::pread(range->fd, got.data(), size, static_cast<off_t>(range->offset)),
            static_cast<ssize_t>(size));
  EXPECT_TRUE(got == value(2));
  EXPECT_EQ(store_->GetStats().corruptions, 0u);
  EXPECT_EQ(store_->GetStats().misses, 0u);
}

TEST_F(ReadPathsTest, DirectReadsIntoAlignedBuffersReadTheSameBytes) {
  store_.reset();
  opts_.direct_reads = true;
  Reopen();
  const size_t size = (1 << 20) + 123;  // an aligned part read directly, the tail buffered
  ASSERT_TRUE(store_->Put("d", MakeValue("d", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  void* mem = nullptr;
  ASSERT_EQ(posix_memalign(&mem, 4096, 2 << 20), 0);
  std::unique_ptr<char, decltype(&free)> buf(static_cast<char*>(mem), &free);
  auto n = store_->GetInto("d", buf.get(), 2 << 20);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(std::string(buf.get(), *n), MakeValue("d", size));
  // An unaligned buffer takes the buffered path.
  auto m = store_->GetInto("d", buf.get() + 1, (2 << 20) - 1);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(std::string(buf.get() + 1, *m), MakeValue("d", size));
}

TEST_F(ReadPathsTest, FileRangesHoldTheExactBytesAndPrefetchChangesNothing) {
  const size_t sizes[] = {16385, 1 << 20, (2 << 20) + 1, (5 << 20) + 17};  // 1 to 3 pieces
  std::vector<std::string> keys;
  for (size_t size : sizes) {
    keys.push_back("f" + std::to_string(size));
    ASSERT_TRUE(store_->Put(keys.back(), MakeValue(keys.back(), size)).ok());
  }
  ASSERT_TRUE(store_->Flush().ok());  // in their files, none pending
  std::vector<std::string_view> hint(keys.begin(), keys.end());
  hint.push_back("absent");
  hint.push_back("");
  store_->Prefetch(hint);
  EXPECT_EQ(store_->GetStats().hits + store_->GetStats().misses, 0u);
  for (size_t i = 0; i < keys.size(); ++i) {
    auto r = store_->GetFileRange(keys[i]);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size, sizes[i]);
    std::string got(sizes[i], '\0');
    ASSERT_EQ(pread(r->fd, got.data(), got.size(), static_cast<off_t>(r->offset)),
              static_cast<ssize_t>(got.size()));
    EXPECT_EQ(got, MakeValue(keys[i], sizes[i])) << sizes[i];
  }
  EXPECT_EQ(store_->GetStats().hits, keys.size());
  EXPECT_TRUE(store_->GetFileRange("absent").status().IsNotFound());
}

TEST_F(ReadPathsTest, DamageInTheLastPieceIsNeverAFileRange) {
  const size_t size = 5 << 20;  // three pieces; the damage lands in the last
  ASSERT_TRUE(store_->Put("v", MakeValue("v", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  DamageBlobFiles();
  auto r = store_->GetFileRange("v");
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
  EXPECT_EQ(store_->GetStats().corruptions, 1u);
  EXPECT_FALSE(store_->Contains("v"));
}

// Mappings of the store's value files in this process, from /proc/self/maps.
int ValueFileMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);) n += line.find("/values/") != line.npos;
  return n;
}

TEST_F(ReadPathsTest, CachedValuesAreCopiedFromTheMappingAndItsDamageIsSeenAtOnce) {
  const size_t size = (1 << 20) + 17;  // the mapped path is for values of 64 KiB or more
  ASSERT_TRUE(store_->Put("m", MakeValue("m", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(ValueFileMappings(), 0);
  std::string buf(size, '\0');
  for (int pass = 0; pass < 2; ++pass) {  // the mapping the first read made serves the second
    auto n = store_->GetInto("m", buf.data(), buf.size());
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    EXPECT_EQ(buf, MakeValue("m", size));
    EXPECT_EQ(ValueFileMappings(), 1) << "a cached value was not read through the mapping";
  }
  // Bytes changed behind the store's back show through the mapping: a miss, never them.
  DamageBlobFiles();
  EXPECT_TRUE(store_->GetInto("m", buf.data(), buf.size()).status().IsNotFound());
  EXPECT_EQ(store_->GetStats().corruptions, 1u);
  EXPECT_FALSE(store_->Contains("m"));
  store_->UnmapFiles();
  EXPECT_EQ(ValueFileMappings(), 0);
  // With mapped_reads off, reads leave no mapping behind (sendfile's hash maps for its call).
  store_.reset();
  opts_.mapped_reads = false;
  Reopen();
  ASSERT_TRUE(store_->Put("p", MakeValue("p", size)).ok());
  ASSERT_TRUE(store_->Flush().ok());
  ASSERT_TRUE(store_->GetInto("p", buf.data(), buf.size()).ok());
  EXPECT_EQ(buf, MakeValue("p", size));
  ASSERT_TRUE(store_->GetFileRange("p").ok());
  EXPECT_EQ(ValueFileMappings(), 0);
}

// Drops the page cache of the store's value files (the store closed, so nothing maps them).
void DropValueFilesFromPageCache(const std::string& dir) {
  for (auto& e : fs::directory_iterator(fs::path(dir) / "values")) {
    const int fd = ::open(e.path().c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    ::fdatasync(fd);
    ASSERT_EQ(::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    ::close(fd);
  }
}

TEST_F(ReadPathsTest, InMemoryTellsWhetherAReadWouldWaitForTheDisk) {
  const size_t size = (1 << 20) + 17;
  ASSERT_TRUE(store_->Put("b", MakeValue("b", size)).ok());
  ASSERT_TRUE(store_->Put("s", MakeValue("s", 100)).ok());  // kept in the index
  ASSERT_TRUE(store_->Put("t", MakeValue("t", size), /*ttl_ms=*/1).ok());
  EXPECT_TRUE(store_->InMemory("b", size)) << "just written: in its write buffer or cached";
  EXPECT_FALSE(store_->InMemory("b", size - 1)) << "larger than max_bytes";
  EXPECT_TRUE(store_->InMemory("s", size)) << "in the memtable";
  EXPECT_FALSE(store_->InMemory("absent", size));
  EXPECT_FALSE(store_->InMemory("", size));
  ::usleep(20 * 1000);
  EXPECT_FALSE(store_->InMemory("t", size)) << "expired: the read removes it";
  ASSERT_TRUE(store_->Flush().ok());
  store_.reset();
  DropValueFilesFromPageCache(dir_.path());
  Reopen();
  const Stats before = store_->GetStats();
  EXPECT_FALSE(store_->InMemory("b", size)) << "its pages were dropped";
  const Stats after = store_->GetStats();
  EXPECT_EQ(after.hits, before.hits);
  EXPECT_EQ(after.misses, before.misses);
  EXPECT_EQ(after.reuses, before.reuses);
  EXPECT_EQ(ValueFileMappings(), 1) << "the kept mapping mincore looked through";
  // A read brings the value in; the next is served from memory.
  std::string buf(size, '\0');
  ASSERT_TRUE(store_->GetInto("b", buf.data(), buf.size()).ok());
  EXPECT_TRUE(store_->InMemory("b", size));
  ASSERT_TRUE(store_->GetInto("s", buf.data(), buf.size()).ok());
  EXPECT_TRUE(store_->InMemory("s", size)) << "its record's block is in the block cache";
}

// A value whose size is a multiple of 4 KiB ends where the next one in its file starts: that
// one still waiting for its write does not make the first "in memory" (it would then be read
// on the server's io thread, from the disk).
TEST_F(ReadPathsTest, TheNextValueWaitingForItsWriteDoesNotMakeAColdValueInMemory) {
  const size_t size = 1 << 20;
  ASSERT_TRUE(store_->PutOwned("a", MakeValue("a", size), {}).ok());
  ASSERT_TRUE(store_->Flush().ok());
  DropValueFilesFromPageCache(dir_.path());
  ASSERT_TRUE(store_->PutOwned("b", MakeValue("b", size), {}).ok());  // written in ~20 ms
  EXPECT_FALSE(store_->InMemory("a", size)) << "cold, its neighbour's write notwithstanding";
  EXPECT_TRUE(store_->InMemory("b", size));
}

TEST(GuardedReadTest, ASigbusOnAMappedPageFailsTheReadNotTheProcess) {
  test::TempDir dir;
  const std::string path = dir.path() + "/f";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  const std::string bytes(3 * 4096, 'b');
  ASSERT_EQ(::pwrite(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
  FileMapping mapping(fd);
  std::shared_ptr<const FileMapping::View> view = mapping.Covering(bytes.size());
  ASSERT_NE(view, nullptr);
  std::string copy(bytes.size(), '\0');
  format::ChecksumStream whole;
  Status s;
  ASSERT_TRUE(GuardedCopyAndUpdate(&whole, copy.data(), view->At(0), bytes.size(), &s, path));
  EXPECT_EQ(copy, bytes);
  EXPECT_EQ(whole.Digest(), format::Checksum(bytes));
  // Pages past the file's end raise SIGBUS when touched, as an unreadable page does.
  ASSERT_EQ(::ftruncate(fd, 0), 0);
  for (int attempt = 0; attempt < 2; ++attempt) {  // the guard is armed again for each read
    format::ChecksumStream stream;
    Status failed;
    EXPECT_FALSE(
        GuardedCopyAndUpdate(&stream, copy.data(), view->At(0), bytes.size(), &failed, path));
    EXPECT_NE(failed.ToString().find("SIGBUS"), std::string::npos) << failed.ToString();
    Status hashed;
    EXPECT_FALSE(GuardedUpdate(&stream, view->At(4096), 4096, &hashed, path));
    EXPECT_NE(hashed.ToString().find("SIGBUS"), std::string::npos) << hashed.ToString();
  }
  view.reset();
  mapping.Reset();
  ::close(fd);
}

TEST_F(ReadPathsTest, DirectWritesLandTheSameBytes) {
  store_.reset();
  opts_.wal = false;
  opts_.direct_writes = true;
  Reopen();
  for (size_t size : kSizes) {
    std::string k = "w" + std::to_string(size);
    ASSERT_TRUE(store_->Put(k, MakeValue(k, size)).ok()) << size;
  }
  ASSERT_TRUE(store_->Flush().ok());
  Reopen();  // from the files
  for (size_t size : kSizes) {
    std::string k = "w" + std::to_string(size);
    auto v = store_->Get(k);
    ASSERT_TRUE(v.ok()) << size << ": " << v.status().ToString();
    EXPECT_EQ(v->view(), MakeValue(k, size)) << size;
  }
}

TEST_F(ReadPathsTest, PutOwnedStoresTheSameBytesWhetherTakenOrCopied) {
  for (bool direct : {false, true}) {
    store_.reset();
    opts_.wal = false;
    opts_.direct_writes = direct;  // O_DIRECT needs an aligned copy: the string is not taken
    Reopen();
    for (size_t size : kSizes) {
      std::string k = "o" + std::to_string(size) + (direct ? "d" : "b");
      std::string v = MakeValue(k, size);
      ASSERT_TRUE(store_->PutOwned(k, std::move(v), PutOptions{}).ok()) << size;
      auto got = store_->Get(k);  // from the pending write, before it reaches the file
      ASSERT_TRUE(got.ok()) << size << ": " << got.status().ToString();
      EXPECT_EQ(got->view(), MakeValue(k, size)) << size;
    }
    ASSERT_TRUE(store_->Flush().ok());
    Reopen();
    for (size_t size : kSizes) {
      std::string k = "o" + std::to_string(size) + (direct ? "d" : "b");
      auto got = store_->Get(k);
      ASSERT_TRUE(got.ok()) << size << ": " << got.status().ToString();
      EXPECT_EQ(got->view(), MakeValue(k, size)) << size;
    }
  }
}

}  // namespace
}  // namespace larder
