// What the config tests share: a scratch directory per test and the messages CONFIG SET gives.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "config/config.h"

namespace larder::config::test_support {

using Pairs = std::vector<std::pair<std::string, std::string>>;

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every option's value, as CONFIG GET * prints them.
inline Pairs AllValues(const Config& c) {
  return c.Get("*");
}

inline std::string Immutable(const std::string& name) {
  return "ERR CONFIG SET failed (possibly related to argument '" + name +
         "') - can't set immutable config";
}

inline std::string Failed(const std::string& name, const std::string& reason) {
  return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + reason;
}

class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/larder_config_test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `content` to `name` in the test directory; returns its path.
  std::string Write(const std::string& name, const std::string& content) {
    std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  // The error LoadFile gives for a file holding `content`.
  std::string LoadError(const std::string& content) {
    Config c;
    auto err = c.LoadFile(Write("bad.conf", content));
    return err.value_or("(no error)");
  }

  std::string dir_;
};

}  // namespace larder::config::test_support
