// common/files.h: a file replaced atomically keeps its mode, and a failed write changes nothing.
#include "common/files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace larder::common {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "larder-files-test-XXXXXX").string();
    dir_ = mkdtemp(tmpl.data());
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(FilesTest, ReplacesContentKeepingTheMode) {
  const fs::path p = dir_ / "nodes.conf";
  ASSERT_EQ(WriteFileAtomically(p.string(), "one\n"), std::nullopt);
  EXPECT_EQ(Slurp(p), "one\n");
  ASSERT_EQ(::chmod(p.c_str(), 0600), 0);
  ASSERT_EQ(WriteFileAtomically(p.string(), "two\n"), std::nullopt);
  EXPECT_EQ(Slurp(p), "two\n");
  struct stat st;
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(FilesTest, FailureNamesTheReasonAndLeavesNothing) {
  const std::optional<std::string> err =
      WriteFileAtomically((dir_ / "missing" / "f").string(), "x");
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, "No such file or directory");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
}

}  // namespace
}  // namespace larder::common
