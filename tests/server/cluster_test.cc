// The cluster's pure parts: the key → slot function (against Redis's check value and slots
// Redis 7 computes), the topology text Kvrocks and kvrocks-controller exchange, and
// ClusterState's version rules, persistence and routing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "cluster/cluster_state.h"
#include "cluster/key_slot.h"
#include "cluster/topology.h"

namespace larder::server::cluster {
namespace {

std::string Id(char c) {
  return std::string(kNodeIdLength, c);
}

// Three masters on 7001-7003 in the controller's form (every line ends with '\n').
std::string ThreeMasters() {
  return Id('a') + " 127.0.0.1 7001 master - 0-5460\n" + Id('b') +
         " 127.0.0.1 7002 master - 5461-10921\n" + Id('c') +
         " 127.0.0.1 7003 master - 10922-16383\n";
}

TEST(KeySlotTest, MatchesRedis) {
  EXPECT_EQ(Crc16("123456789"), 0x31C3);  // CRC16-XMODEM's check value
  EXPECT_EQ(KeySlot("foo"), 12182);       // CLUSTER KEYSLOT on Redis 7
  EXPECT_EQ(KeySlot("bar"), 5061);
  EXPECT_EQ(KeySlot("test"), 6918);
  EXPECT_EQ(KeySlot(""), 0);
}

TEST(KeySlotTest, HashTags) {
  EXPECT_EQ(KeySlot("{user1000}.following"), KeySlot("user1000"));
  EXPECT_EQ(KeySlot("a{user1000}b{x}"), KeySlot("user1000"));  // the first {...} decides
  EXPECT_EQ(KeySlot("{}user"), KeySlot("{}user"));
  EXPECT_EQ(HashedPart("{}user"), "{}user");  // an empty tag hashes the whole key
  EXPECT_EQ(HashedPart("{user"), "{user");    // no closing brace: the whole key
  EXPECT_EQ(HashedPart("a{b}{c}"), "b");
  EXPECT_EQ(HashedPart("a}{b}"), "b");
}

TEST(TopologyTest, ParsesTheControllersText) {
  std::string error;
  auto t = Topology::Parse(ThreeMasters() + Id('d') + " 10.0.0.4 7004 slave " + Id('a') + "\n", 7,
                           &error);
  ASSERT_TRUE(t) << error;
  EXPECT_EQ(t->version(), 7);
  EXPECT_EQ(t->nodes().size(), 4u);
  EXPECT_EQ(t->SlotsAssigned(), 16384);
  EXPECT_EQ(t->MastersWithSlots(), 3);
  EXPECT_EQ(t->OwnerOf(0)->port, 7001);
  EXPECT_EQ(t->OwnerOf(5461)->port, 7002);
  EXPECT_EQ(t->OwnerOf(16383)->port, 7003);
  ASSERT_EQ(t->ReplicasOf(Id('a')).size(), 1u);
  EXPECT_EQ(t->ReplicasOf(Id('a'))[0]->host, "10.0.0.4");
}

TEST(TopologyTest, SingleSlotsAndMergedRanges) {
  std::string error;
  auto t = Topology::Parse(Id('a') + " h 1 master -  5 6-9 100\n" + Id('b') + " h 2 master - \n", 1,
                           &error);
  ASSERT_TRUE(t) << error;
  const auto& slots = t->nodes()[0].slots;
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[0], (SlotRange{5, 9}));
  EXPECT_EQ(slots[1], (SlotRange{100, 100}));
  EXPECT_EQ(t->OwnerOf(4), nullptr);
  EXPECT_TRUE(t->nodes()[1].slots.empty());  // a new shard: a master without slots
  EXPECT_EQ(t->ToNodesText(), Id('a') + " h 1 master - 5-9 100\n" + Id('b') + " h 2 master -\n");
  auto again = Topology::Parse(t->ToNodesText(), 1, &error);
  ASSERT_TRUE(again) << error;
  EXPECT_EQ(again->ToNodesText(), t->ToNodesText());
}

TEST(TopologyTest, RefusesBadText) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "Invalid cluster nodes info"},
      {"short 127.0.0.1 7001 master - 0-10\n", "Invalid cluster node id"},
      {Id('a') + " h 0 master - 0\n", "Invalid cluster node port"},
      {Id('a') + " h 70000 master - 0\n", "Invalid cluster node port"},
      {Id('a') + " h x master - 0\n", "Invalid cluster node port"},
      {Id('a') + " h 1 boss - 0\n", "Invalid cluster node role"},
      {Id('a') + " h 1 master\n", "Invalid cluster nodes info"},
      {Id('a') + " h 1 master x 0\n", "Invalid cluster nodes info"},
      {Id('a') + " h 1 slave " + Id('b') + " 0\n", "Invalid cluster nodes info"},
      {Id('a') + " h 1 master - 5-5\n", "Slot is out of range"},
      {Id('a') + " h 1 master - 9-5\n", "Slot is out of range"},
      {Id('a') + " h 1 master - 16384\n", "Slot is out of range"},
      {Id('a') + " h 1 master - -1\n", "Slot is out of range"},
      {Id('a') + " h 1 master - 0-10\n" + Id('b') + " h 2 master - 10-20\n",
       "Slot distribution is overlapped"},
      {Id('a') + " h 1 master - 0-10 " + Id('b') + " h 2 master - 11\n",
       "Invalid nodes definition: Missing newline between node entries."},
      {Id('a') + " h 1 master - 0\n" + Id('a') + " h 2 master - 1\n", "Duplicate cluster node id"},
  };
  for (const auto& [text, want] : cases) {
    std::string error;
    EXPECT_FALSE(Topology::Parse(text, 1, &error)) << text;
    EXPECT_EQ(error, want) << text;
  }
}

TEST(TopologyTest, SlotsMovedToAMaster) {
  std::string error;
  auto t = Topology::Parse(ThreeMasters(), 1, &error);
  ASSERT_TRUE(t);
  auto moved = t->WithSlotsMovedTo({0, 99}, Id('c'), 2, &error);
  ASSERT_TRUE(moved) << error;
  EXPECT_EQ(moved->version(), 2);
  EXPECT_EQ(moved->OwnerOf(99)->id, Id('c'));
  EXPECT_EQ(moved->OwnerOf(100)->id, Id('a'));
  EXPECT_EQ(moved->nodes()[2].slots.front(), (SlotRange{0, 99}));
  EXPECT_FALSE(t->WithSlotsMovedTo({0, 1}, Id('z'), 2, &error));
  EXPECT_EQ(error, "No this node in the cluster");
}

class ClusterStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("larder_cluster_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

TEST_F(ClusterStateTest, VersionRules) {
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  EXPECT_EQ(state.Version(), -1);
  EXPECT_EQ(*state.SetNodes(ThreeMasters(), -1, false), "ERR Invalid cluster version");
  ASSERT_FALSE(state.SetNodes(ThreeMasters(), 5, false));
  EXPECT_EQ(*state.SetNodes(ThreeMasters(), 4, false), "ERR Invalid cluster version");
  // The same version is a no-op, even with different text.
  ASSERT_FALSE(state.SetNodes(Id('a') + " h 1 master - 0-16383\n", 5, false));
  EXPECT_EQ(state.Current()->nodes().size(), 3u);
  // FORCE applies a lower version.
  ASSERT_FALSE(state.SetNodes(Id('a') + " h 1 master - 0-16383\n", 3, true));
  EXPECT_EQ(state.Version(), 3);
  // A refused topology changes nothing.
  EXPECT_EQ(*state.SetNodes(Id('a') + " h 1 master - 5-5\n", 9, false), "ERR Slot is out of range");
  EXPECT_EQ(state.Version(), 3);
  // SETSLOT needs exactly the next version.
  ASSERT_FALSE(state.SetNodes(ThreeMasters(), 10, false));
  EXPECT_EQ(*state.SetSlot({0, 1}, Id('b'), 12), "ERR Invalid cluster version");
  ASSERT_FALSE(state.SetSlot({0, 1}, Id('b'), 11));
  EXPECT_EQ(state.Current()->OwnerOf(1)->id, Id('b'));
}

TEST_F(ClusterStateTest, TopologyAndIdSurviveARestart) {
  {
    ClusterState state;
    ASSERT_FALSE(state.Enable(dir_.string()));
    ASSERT_FALSE(state.SetNodeId(Id('b')));
    ASSERT_FALSE(state.SetNodes(ThreeMasters(), 4, false));
  }
  ClusterState reopened;
  ASSERT_FALSE(reopened.Enable(dir_.string()));
  EXPECT_EQ(reopened.MyId(), Id('b'));
  EXPECT_EQ(reopened.Version(), 4);
  EXPECT_EQ(reopened.Current()->ToNodesText(), ThreeMasters());
  ASSERT_FALSE(reopened.Reset());
  ClusterState after_reset;
  ASSERT_FALSE(after_reset.Enable(dir_.string()));
  EXPECT_EQ(after_reset.Version(), -1);
  EXPECT_EQ(after_reset.MyId(), "");
}

TEST_F(ClusterStateTest, ABadNodesFileNamesItsLine) {
  std::ofstream(dir_ / "nodes.conf") << "version 3\nid " << Id('a') << "\nbogus 1\n";
  ClusterState state;
  auto error = state.Enable(dir_.string());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("nodes.conf:3: unknown key 'bogus'"), std::string::npos) << *error;
  std::ofstream(dir_ / "nodes.conf") << "version 3x\n";  // not read as 3
  ClusterState again;
  error = again.Enable(dir_.string());
  ASSERT_TRUE(error);
  EXPECT_NE(error->find("nodes.conf:1: version '3x' is not an integer"), std::string::npos)
      << *error;
}

TEST_F(ClusterStateTest, AnUnsavableChangeChangesNothing) {
  ClusterState state;
  ASSERT_FALSE(state.Enable((dir_ / "missing").string()));  // its directory does not exist
  auto error = state.SetNodes(ThreeMasters(), 1, false);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->rfind("ERR cannot save the cluster topology", 0), 0u) << *error;
  EXPECT_EQ(state.Version(), -1);
}

TEST_F(ClusterStateTest, Routing) {
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  EXPECT_EQ(*state.Route({0}), "CLUSTERDOWN Hash slot not served");
  ASSERT_FALSE(state.SetNodeId(Id('a')));
  ASSERT_FALSE(state.SetNodes(Id('a') + " h 7001 master - 0-99\n" + Id('b') +
                                  " h 7002 master - 100-199\n" + Id('r') + " h 7003 slave " +
                                  Id('b') + "\n",
                              1, false));
  EXPECT_FALSE(state.Route({5}));
  EXPECT_EQ(*state.Route({150}), "MOVED 150 h:7002");
  EXPECT_EQ(*state.Route({300}), "CLUSTERDOWN Hash slot not served");
  // Migrating 0-9 to b: writes are refused in the final phase, then the range is b's.
  state.BeginMigration({0, 9}, Id('b'));
  EXPECT_FALSE(state.Route({5, /*write=*/true}));
  state.ForbidWrites({0, 9});
  EXPECT_EQ(*state.Route({5, true}),
            "TRYAGAIN Can't write to slot being migrated which is in write forbidden phase");
  EXPECT_FALSE(state.Route({5, false}));
  EXPECT_TRUE(state.FinishMigration(true).empty());
  EXPECT_EQ(*state.Route({5, false}), "MOVED 5 h:7002");
  EXPECT_EQ(state.Migration().state, MigrationState::kSuccess);
  // An import of 150-159: the importing link and ASKING clients may use it; once it succeeded,
  // every client may.
  ASSERT_FALSE(state.SetImport({150, 159}, ImportState::kStart, 7));
  EXPECT_EQ(*state.Route({155}), "MOVED 155 h:7002");
  EXPECT_FALSE(state.Route({155, true, /*asking=*/true}));
  EXPECT_FALSE(state.Route({155, true, false, false, /*importing=*/true}));
  EXPECT_EQ(*state.SetImport({150, 151}, ImportState::kSuccess, 7),
            "ERR mismatch slot, importing slot(s): 150-159, but got: 150-151");
  ASSERT_FALSE(state.SetImport({150, 159}, ImportState::kSuccess, 7));
  EXPECT_FALSE(state.Route({155, true}));
  EXPECT_EQ(*state.Route({160}), "MOVED 160 h:7002");
}

// Three masters: a (this node) 0-99, b 100-199, c 200-299.
std::string AbcTopology(int a_last = 99, int b_first = 100) {
  return Id('a') + " h 7001 master - 0-" + std::to_string(a_last) + "\n" + Id('b') +
         " h 7002 master - " + std::to_string(b_first) + "-199\n" + Id('c') +
         " h 7003 master - 200-299\n";
}

TEST_F(ClusterStateTest, AMigratedSlotRedirectsUntilATopologyGivesItAwaySlotBySlot) {
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  ASSERT_FALSE(state.SetNodeId(Id('a')));
  ASSERT_FALSE(state.SetNodes(AbcTopology(), 1, false));
  state.BeginMigration({10, 11}, Id('b'));
  EXPECT_TRUE(state.FinishMigration(true).empty());
  // A second migration before the controller's switch keeps the first one's redirect.
  state.BeginMigration({50, 50}, Id('c'));
  EXPECT_TRUE(state.FinishMigration(true).empty());
  EXPECT_EQ(*state.Route({10}), "MOVED 10 h:7002");
  EXPECT_EQ(*state.Route({50, true}), "MOVED 50 h:7003");
  EXPECT_TRUE(state.AnyMigrated({0, 10}));
  EXPECT_FALSE(state.AnyMigrated({12, 49}));
  // A SETSLOT giving away slot 10 alone: its keys go, slot 11 still redirects.
  ASSERT_FALSE(state.SetSlot({10, 10}, Id('b'), 2));
  EXPECT_EQ(state.TakeGivenAwayRanges(), (std::vector<SlotRange>{{10, 10}}));
  EXPECT_EQ(*state.Route({11, true}), "MOVED 11 h:7002");
  EXPECT_TRUE(state.TakeGivenAwayRanges().empty());  // once
}

TEST_F(ClusterStateTest, AMigrationEndingAfterTheSwitchLeavesNoRedirect) {
  // The controller switched slot 10 to b before the migration's end was seen here: the slot is
  // given away (its keys go), and a later topology giving it back is served, not redirected.
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  ASSERT_FALSE(state.SetNodeId(Id('a')));
  ASSERT_FALSE(state.SetNodes(AbcTopology(), 1, false));
  state.BeginMigration({10, 10}, Id('b'));
  ASSERT_FALSE(state.SetSlot({10, 10}, Id('b'), 2));
  EXPECT_EQ(state.FinishMigration(true), (std::vector<SlotRange>{{10, 10}}));
  EXPECT_FALSE(state.AnyMigrated({10, 10}));
  EXPECT_TRUE(state.TakeGivenAwayRanges().empty());  // deleted by the migration's end
  ASSERT_FALSE(state.SetSlot({10, 10}, Id('a'), 3));
  EXPECT_FALSE(state.Route({10, true})) << *state.Route({10, true});
}

TEST_F(ClusterStateTest, ImportedSlotsAreServedUntilATopologyAssignsThem) {
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  ASSERT_FALSE(state.SetNodeId(Id('a')));
  ASSERT_FALSE(state.SetNodes(AbcTopology(), 1, false));
  // Two imports before the controller's push: both served.
  ASSERT_FALSE(state.SetImport({150, 150}, ImportState::kStart, 7));
  ASSERT_FALSE(state.SetImport({150, 150}, ImportState::kSuccess, 7));
  ASSERT_FALSE(state.SetImport({250, 250}, ImportState::kStart, 7));
  ASSERT_FALSE(state.SetImport({250, 250}, ImportState::kSuccess, 7));
  EXPECT_FALSE(state.Route({150, true}));
  EXPECT_FALSE(state.Route({250, true}));
  // The push gives 150 to this node; 250 went elsewhere meanwhile (c keeps it): the import no
  // longer makes this node serve it.
  ASSERT_FALSE(state.SetNodes(Id('a') + " h 7001 master - 0-99 150\n" + Id('b') +
                                  " h 7002 master - 100-149 151-199\n" + Id('c') +
                                  " h 7003 master - 200-299\n",
                              2, false));
  EXPECT_FALSE(state.Route({150, true}));
  EXPECT_EQ(*state.Route({250, true}), "MOVED 250 h:7003");
  // Only the import's own link failing it: another connection's close changes nothing.
  ASSERT_FALSE(state.SetImport({260, 260}, ImportState::kStart, 7));
  EXPECT_FALSE(state.ImportLinkClosed(8));
  EXPECT_EQ(state.Import().state, ImportState::kStart);
  EXPECT_EQ(state.ImportLinkClosed(7), (SlotRange{260, 260}));
  EXPECT_EQ(state.Import().state, ImportState::kError);
}

TEST_F(ClusterStateTest, AReplicaServesReadsToReadonlyClients) {
  ClusterState state;
  ASSERT_FALSE(state.Enable(dir_.string()));
  ASSERT_FALSE(state.SetNodeId(Id('r')));
  ASSERT_FALSE(state.SetNodes(
      Id('a') + " h 7001 master - 0-16383\n" + Id('r') + " h 7003 slave " + Id('a') + "\n", 1,
      false));
  EXPECT_EQ(*state.Route({5}), "MOVED 5 h:7001");
  EXPECT_FALSE(state.Route({5, false, false, /*readonly=*/true}));
  EXPECT_EQ(*state.Route({5, true, false, true}), "MOVED 5 h:7001");
}

}  // namespace
}  // namespace larder::server::cluster
