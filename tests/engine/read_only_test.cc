// Options::read_only: reads work, writes are refused, and nothing in the directory changes, not
// even what a read-write open would clean up (expired entries, corrupt values, LOG).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;
namespace fs = std::filesystem;

// Every file under `dir`: its size, modification time and the XXH3 of its bytes.
std::map<std::string, std::string> Snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string b = bytes.str();
    struct stat st {};
    ::stat(e.path().c_str(), &st);
    out[fs::relative(e.path(), dir).string()] =
        std::to_string(b.size()) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
        std::to_string(st.st_mtim.tv_nsec) + " " + std::to_string(XXH3_64bits(b.data(), b.size()));
  }
  return out;
}

Options BaseOptions(std::shared_ptr<test::ManualClock> clock) {
  Options o = test::QuietOptions();
  o.clock = std::move(clock);
  return o;
}

Options ReadOnly(Options o) {
  o.read_only = true;
  return o;
}

// Keys "big" (1 MiB, a blob file), "small" (inline) and "short" (expiring after 1 s), closed.
void Populate(const Options& o, const std::string& dir) {
  auto r = Store::Open(o, dir);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE((*r)->Put("big", MakeValue("big", 1 << 20)).ok());
  ASSERT_TRUE((*r)->Put("small", MakeValue("small", 100)).ok());
  ASSERT_TRUE((*r)->Put("short", MakeValue("short", 1 << 20), /*ttl_ms=*/1000).ok());
  ASSERT_TRUE((*r)->Close().ok());
}

TEST(ReadOnly, ReadsAnswerWritesAreRefusedAndNoFileChanges) {
  test::TempDir dir;
  auto clock = std::make_shared<test::ManualClock>();
  ASSERT_NO_FATAL_FAILURE(Populate(BaseOptions(clock), dir.path()));
  clock->Advance(5000);  // "short" has expired: a read-write open would remove it
  const auto before = Snapshot(dir.path());

  auto r = Store::Open(ReadOnly(BaseOptions(clock)), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  Store& s = **r;
  auto big = s.Get("big");
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  EXPECT_EQ(big->view(), MakeValue("big", 1 << 20));
  auto small = s.Get("small");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ(small->view(), MakeValue("small", 100));
  EXPECT_TRUE(s.Get("short").status().IsNotFound());
  EXPECT_EQ(s.GetStats().keys, 2u);

  const std::string refusal = dir.path() + " is open read-only";
  for (Status w :
       {s.Put("new", "v"), s.PutOwned("new", std::string("v"), PutOptions{}), s.CheckPut("new", 1),
        s.Delete("big"), s.SetExpiry("big", 0), s.Clear(), s.EvictTo(0), s.Flush(), s.Compact()}) {
    EXPECT_TRUE(w.IsNotSupported()) << w.ToString();
    EXPECT_EQ(w.message(), refusal);
  }
  EXPECT_FALSE(s.PutInMemory("new", 1));
  s.Maintain();
  EXPECT_EQ(s.Touch({"big"}), 1u);
  ASSERT_TRUE(s.Close().ok());
  EXPECT_EQ(Snapshot(dir.path()), before) << "a read-only open changed the directory";
}

TEST(ReadOnly, TheDirectoryIsLockedAgainstAReadWriteOpen) {
  test::TempDir dir;
  auto clock = std::make_shared<test::ManualClock>();
  ASSERT_NO_FATAL_FAILURE(Populate(BaseOptions(clock), dir.path()));
  {
    auto rw = Store::Open(BaseOptions(clock), dir.path());
    ASSERT_TRUE(rw.ok());
    auto ro = Store::Open(ReadOnly(BaseOptions(clock)), dir.path());
    EXPECT_TRUE(ro.status().IsBusy()) << ro.status().ToString();
  }
  auto ro = Store::Open(ReadOnly(BaseOptions(clock)), dir.path());
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  auto rw = Store::Open(BaseOptions(clock), dir.path());
  EXPECT_TRUE(rw.status().IsBusy()) << rw.status().ToString();
  ASSERT_TRUE((*ro)->Close().ok());
  EXPECT_TRUE(Store::Open(BaseOptions(clock), dir.path()).ok()) << "Close let go of the lock";
}

// Where the LOCK file cannot be opened for writing, the open checks that no other process holds
// the lock (here a child holding it as RocksDB does: a write lock on the whole file).
TEST(ReadOnly, AnUnwritableLockFileIsCheckedNotTaken) {
  test::TempDir dir;
  auto clock = std::make_shared<test::ManualClock>();
  ASSERT_NO_FATAL_FAILURE(Populate(BaseOptions(clock), dir.path()));
  const std::string lock = dir.path() + "/LOCK";
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t holder = fork();
  if (holder == 0) {
    const int fd = ::open(lock.c_str(), O_RDWR);
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    const char ok = fd >= 0 && ::fcntl(fd, F_SETLK, &fl) == 0 ? '1' : '0';
    if (::write(ready[1], &ok, 1) != 1) _exit(1);
    ::pause();
    _exit(0);
  }
  struct Reap {  // however the test ends, the child does not outlive it
    pid_t pid;
    ~Reap() {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  } reap{holder};
  char ok = 0;
  ASSERT_EQ(::read(ready[0], &ok, 1), 1);
  ASSERT_EQ(ok, '1');
  ::chmod(lock.c_str(), 0444);  // root may still write it: then LockFile finds the holder
  auto held = Store::Open(ReadOnly(BaseOptions(clock)), dir.path());
  EXPECT_TRUE(held.status().IsBusy()) << held.status().ToString();
  ::kill(holder, SIGKILL);
  ::waitpid(holder, nullptr, 0);  // the lock goes with it (Reap's second wait finds no child)
  ::close(ready[0]);
  ::close(ready[1]);
  auto r = Store::Open(ReadOnly(BaseOptions(clock)), dir.path());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)->Get("big").ok());
}

TEST(ReadOnly, ACorruptValueIsAMissAndStaysForTheNextReadWriteOpen) {
  test::TempDir dir;
  Options o = BaseOptions(nullptr);  // the system clock, as Verify's
  {
    auto r = Store::Open(o, dir.path());
    ASSERT_TRUE(r.ok());
    for (const char* k : {"a", "b", "c"}) ASSERT_TRUE((*r)->Put(k, MakeValue(k, 1 << 20)).ok());
  }
  test::DamageBlobFileTails(dir.path());  // inside "c", the last value of its file
  const auto before = Snapshot(dir.path());
  for (int pass = 0; pass < 2; ++pass) {
    auto report = Verify(dir.path());
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    EXPECT_EQ(report->corrupt, 1u) << "pass " << pass;
    EXPECT_EQ(report->ok, 2u);
    auto r = Store::Open(ReadOnly(o), dir.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    auto v = (*r)->Get("c");
    EXPECT_TRUE(v.status().IsNotFound());
    EXPECT_EQ(v.status().message(), "corrupt value (left in place: read-only)");
    EXPECT_EQ((*r)->GetStats().corruptions, 1u);
  }
  EXPECT_EQ(Snapshot(dir.path()), before);
  {
    auto rw = Store::Open(o, dir.path());  // removes it at its first read
    ASSERT_TRUE(rw.ok());
    EXPECT_EQ((*rw)->Get("c").status().message(), "corrupt value removed");
  }
  auto report = Verify(dir.path());
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->clean());
}

TEST(ReadOnly, AnOlderFormatIsRefusedUntilConverted) {
  test::TempDir tmp;
  const std::string cmd = "tar xzf " LARDER_TEST_DATA_DIR "/format1.tar.gz -C " + tmp.path();
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const std::string dir = tmp.sub("data");
  const auto before = Snapshot(dir);
  Options o;
  o.read_only = true;
  o.max_disk_bytes = 1ull << 30;
  auto r = Store::Open(o, dir);
  EXPECT_TRUE(r.status().IsNotSupported()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("has data format 1"), std::string::npos);
  EXPECT_EQ(Snapshot(dir), before);
}

TEST(ReadOnly, AMissingDirectoryIsNotCreated) {
  test::TempDir tmp;
  Options o;
  o.read_only = true;  // create_if_missing (true) is ignored
  auto r = Store::Open(o, tmp.sub("absent"));
  EXPECT_TRUE(r.status().IsNotFound()) << r.status().ToString();
  EXPECT_FALSE(fs::exists(tmp.sub("absent")));
}

}  // namespace
}  // namespace larder
