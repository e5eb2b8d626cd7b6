// Keys whose 64-bit hashes collide (forced through the engine's test seam): both are stored,
// read, replaced, deleted, expired and scanned separately, before and after a reopen, and a
// read never returns the other key's value.
#include <gtest/gtest.h>

#include <algorithm>

#include "larder/store.h"
#include "test_util.h"

namespace larder {
namespace {

using test::MakeValue;

class CollisionTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    Options o;
    o.maintenance_interval_ms = 0;
    o.max_disk_bytes = 1ull << 30;
    o.clock = clock_;
    auto r = Store::Open(o, dir_.path());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store_ = std::move(r).value();
  }
  std::string Read(const std::string& k) {
    auto r = store_->Get(k);
    return r.ok() ? std::string(r->view()) : "<miss>";
  }

  test::TempDir dir_;
  test::CollidingKeyHashes colliding_;  // keys "c-*" share a hash
  std::shared_ptr<test::ManualClock> clock_ = std::make_shared<test::ManualClock>();
  std::unique_ptr<Store> store_;
};

TEST_F(CollisionTest, CollidingKeysLiveSideBySide) {
  const std::string a = MakeValue("a", 200000), b = MakeValue("b", 100), c = MakeValue("c", 70000);
  ASSERT_TRUE(store_->Put("c-a", a).ok());
  ASSERT_TRUE(store_->Put("c-b", b).ok());
  EXPECT_EQ(Read("c-a"), a);
  EXPECT_EQ(Read("c-b"), b);
  EXPECT_EQ(Read("c-absent"), "<miss>");  // same hash, never stored
  EXPECT_EQ(store_->GetStats().corruptions, 0u) << "a colliding miss is not damage";
  EXPECT_EQ(store_->Exists({"c-a", "c-b", "c-absent"}), 2u);
  EXPECT_EQ(store_->Info("c-a")->value_size, a.size());
  EXPECT_EQ(store_->Info("c-b")->value_size, b.size());

  // Replace one; the other is untouched.
  ASSERT_TRUE(store_->Put("c-a", c).ok());
  EXPECT_EQ(Read("c-a"), c);
  EXPECT_EQ(Read("c-b"), b);
  EXPECT_EQ(store_->GetStats().keys, 2u);

  // Expire one, delete the other's twin later.
  ASSERT_TRUE(store_->SetExpiry("c-b", clock_->NowMs() + 1000).ok());
  EXPECT_EQ(store_->Ttl("c-b"), 1000);
  EXPECT_EQ(store_->Ttl("c-a"), kTtlNoExpiry);

  ScanPage page = store_->Scan(0, "*", 100);
  std::sort(page.keys.begin(), page.keys.end());
  EXPECT_EQ(page.keys, (std::vector<std::string>{"c-a", "c-b"}));

  Reopen();
  EXPECT_EQ(Read("c-a"), c);
  EXPECT_EQ(Read("c-b"), b);
  EXPECT_EQ(store_->Ttl("c-b"), 1000);
  ASSERT_TRUE(store_->Delete("c-a").ok());
  EXPECT_TRUE(store_->Delete("c-a").IsNotFound());
  EXPECT_EQ(Read("c-b"), b);
  clock_->Advance(1000);
  EXPECT_EQ(Read("c-b"), "<miss>");
  Reopen();
  EXPECT_EQ(store_->GetStats().keys, 0u);
}

}  // namespace
}  // namespace larder
