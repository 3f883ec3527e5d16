// The node runtime: option checks, backend choice, a static two-node cluster that links
// and reports over its admin port, a ZooKeeper-backed node whose region it is primary
// of, and an admin port that survives malformed input.
#include "farm/node/node.h"

#include <sys/socket.h>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "farm/fabric/socket_util.h"
#include "farm/node/admin_protocol.h"
#include "gtest/gtest.h"
#include "membership/placement.h"
#include "tests/support/zk_test_server.h"

namespace farm::node {
namespace {

NodeOptions BaseOptions(NodeId id, const std::string& dir) {
  NodeOptions o;
  o.node_id = id;
  o.cluster_secret = "0123456789abcdef-node-test";
  o.region_bytes = 32u << 20;
  o.threads = 2;
  o.data_dir = absl::StrCat(dir, "/node-", id);
  o.session_timeout = absl::Seconds(1);
  return o;
}

class NodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-node-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

// Allocates on `node`'s thread 0 and waits for the result.
absl::StatusOr<FatPtr> AllocateOn(Node& node, uint64_t payload) {
  auto result = std::make_shared<absl::StatusOr<FatPtr>>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  node.loop(0).Post([&node, payload, result, done] {
    node.alloc_service().thread(0)->Allocate(payload, {}, [result, done](absl::StatusOr<FatPtr> p) {
      *result = std::move(p);
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(absl::Seconds(10))) {
    return absl::DeadlineExceededError("the allocation did not complete in 10 s");
  }
  return *result;
}

AdminResponse Stats(const std::string& address) {
  AdminRequest req;
  req.set_format(kAdminFormat);
  req.set_command(AdminRequest::STATS);
  absl::StatusOr<AdminResponse> r = AdminCall(address, req);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : AdminResponse();
}

TEST_F(NodeTest, OptionsAreCheckedWithClearErrors) {
  NodeOptions o = BaseOptions(1, dir_);
  o.zookeeper = "127.0.0.1:2181";
  o.static_members = "1=tcp:127.0.0.1:1";
  absl::Status s = ResolveNodeOptions(o).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("exactly one of --zookeeper"), std::string::npos) << s;
  o.static_members.clear();
  EXPECT_TRUE(ResolveNodeOptions(o).ok());
  o.zookeeper.clear();
  EXPECT_FALSE(ResolveNodeOptions(o).ok()) << "no membership source at all";
  o = BaseOptions(0, dir_);
  o.zookeeper = "127.0.0.1:2181";
  EXPECT_FALSE(ResolveNodeOptions(o).ok());
  o = BaseOptions(1, dir_);
  o.zookeeper = "127.0.0.1:2181";
  o.cluster_secret = "short";
  EXPECT_FALSE(ResolveNodeOptions(o).ok());
  o.cluster_secret = "0123456789abcdef";
  o.fabric = "rdma";
  EXPECT_FALSE(ResolveNodeOptions(o).ok());
  o.fabric = "tcp";
  o.listen = "0.0.0.0:7000";
  EXPECT_FALSE(ResolveNodeOptions(o).ok()) << "a wildcard address cannot be published";
}

// A node refuses the data directory of another node or cluster (farm/storage's
// identity file), before anything else starts.
TEST_F(NodeTest, ADataDirectoryOfAnotherNodeOrClusterIsRefused) {
  NodeOptions one = BaseOptions(1, dir_);
  one.static_members = "1=tcp:127.0.0.1:1";
  ASSERT_TRUE(Node::Create(one).ok());
  NodeOptions two = BaseOptions(2, dir_);
  two.static_members = "2=tcp:127.0.0.1:1";
  two.data_dir = one.data_dir;
  absl::StatusOr<std::unique_ptr<Node>> refused = Node::Create(two);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("belongs to node 1 of cluster 'farm'"), std::string::npos)
      << refused.status();
  NodeOptions other_cluster = one;
  other_cluster.cluster = "elsewhere";
  EXPECT_EQ(Node::Create(other_cluster).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(Node::Create(one).ok()) << "its own node starts on it again";
}

// Message ids come from one registry of disjoint ranges (checked at build time); two
// services registering one id fail at start with an error naming both.
TEST_F(NodeTest, TwoServicesWithOneMessageIdAreRefusedNamingBoth) {
  static_assert(kKvMsgIds[1] == 0x1101 && kKvMsgIds.contains(kKvMsgIds[1]));
  static_assert(MsgIdRangesAreDisjoint());
  EXPECT_STREQ(MsgIdOwner(0x0203), "tx");
  EXPECT_STREQ(MsgIdOwner(0x1100), "kv");
  EXPECT_STREQ(MsgIdOwner(0x9000), "unassigned");
  NodeOptions o = BaseOptions(1, dir_);
  o.static_members = "1=tcp:127.0.0.1:1";
  absl::StatusOr<std::unique_ptr<Node>> node = Node::Create(o);
  ASSERT_TRUE(node.ok()) << node.status();
  auto nothing = [](MsgThread&, const Message&) {};
  ASSERT_TRUE((*node)->RegisterHandler(kKvMsgIds[0], nothing, "kv").ok());
  absl::Status twice = (*node)->RegisterHandler(kKvMsgIds[0], nothing, "graph");
  EXPECT_EQ(twice.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(twice.message(),
            "message id 0x1100 (in kv's range) has a handler from kv already; the one from graph is refused");
  // The node's own protocols' ids are not an application's to take.
  EXPECT_EQ((*node)->RegisterHandler(kTxMsgIds[1], nothing, "kv").code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(NodeTest, AutoPicksVerbsWithADeviceElseShmOnOneHostElseTcp) {
  const std::vector<std::string> none;
  const std::vector<std::string> rxe = {"rxe0"};
  NodeOptions o = BaseOptions(1, dir_);
  o.zookeeper = "127.0.0.1:2181,localhost:2182";
  EXPECT_EQ(ResolveBackend(o, none).backend, "shm");
  EXPECT_EQ(ResolveBackend(o, rxe).backend, "verbs");
  EXPECT_NE(ResolveBackend(o, rxe).reason.find("rxe0"), std::string::npos)
      << ResolveBackend(o, rxe).reason;
  o.zookeeper = "127.0.0.1:2181,10.1.2.3:2181";
  EXPECT_EQ(ResolveBackend(o, none).backend, "tcp");
  EXPECT_EQ(ResolveBackend(o, rxe).backend, "verbs");
  o.zookeeper.clear();
  o.static_members = "1=shm:/a.sock,2=shm:/b.sock";
  EXPECT_EQ(ResolveBackend(o, rxe).backend, "shm") << "a static list's locators decide";
  o.static_members = "1=verbs:10.0.0.1:7000,2=verbs:10.0.0.2:7000";
  EXPECT_EQ(ResolveBackend(o, none).backend, "verbs");
  o.static_members = "1=shm:/a.sock,2=tcp:10.0.0.2:7000";
  EXPECT_EQ(ResolveBackend(o, none).backend, "tcp");
  o.fabric = "shm";
  EXPECT_EQ(ResolveBackend(o, rxe).backend, "shm") << "a forced backend is kept";
}

TEST_F(NodeTest, StaticClusterLinksAndReportsOverTheAdminPort) {
  absl::StatusOr<UniqueFd> p1 = ListenTcp("127.0.0.1:0"), p2 = ListenTcp("127.0.0.1:0");
  ASSERT_TRUE(p1.ok() && p2.ok());
  const std::string a1 = *LocalTcpAddress(p1->get()), a2 = *LocalTcpAddress(p2->get());
  p1->reset();
  p2->reset();  // free the ports for the nodes
  const std::string members = absl::StrCat("1=tcp:", a1, ",2=tcp:", a2);
  std::vector<std::unique_ptr<Node>> nodes;
  for (NodeId id : {1u, 2u}) {
    NodeOptions o = BaseOptions(id, dir_);
    o.static_members = members;
    o.listen = id == 1 ? a1 : a2;
    absl::StatusOr<std::unique_ptr<Node>> n = Node::Create(o);
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_TRUE((*n)->Start().ok());
    nodes.push_back(std::move(*n));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (!(nodes[0]->messenger().IsConnected(2) && nodes[1]->messenger().IsConnected(1)) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_TRUE(nodes[0]->messenger().IsConnected(2));
  absl::StatusOr<FatPtr> object = AllocateOn(*nodes[1], 64);
  ASSERT_TRUE(object.ok()) << object.status();
  const AdminResponse r = Stats(nodes[1]->admin_address());
  EXPECT_EQ(r.stats().node_id(), 2u);
  EXPECT_EQ(r.stats().epoch(), 1u);
  EXPECT_TRUE(r.stats().serving());
  EXPECT_EQ(r.stats().membership(), "static");
  EXPECT_EQ(r.stats().backend(), "tcp");
  EXPECT_EQ(r.stats().connected_peers(), 1u);
  EXPECT_EQ(r.stats().threads_size(), 2);
  ASSERT_EQ(r.stats().regions_size(), 1);
  EXPECT_EQ(r.stats().regions(0).id(), object->addr.region());
  EXPECT_EQ(r.stats().regions(0).bytes(), 32u << 20);
  for (auto& n : nodes) n->Stop();
}

TEST_F(NodeTest, AdminPortRefusesMalformedInputAndKeepsServing) {
  absl::StatusOr<std::unique_ptr<AdminServer>> server = AdminServer::Start(
      "127.0.0.1:0", [](const AdminRequest&) {
        AdminResponse r;
        r.mutable_stats()->set_node_id(7);
        return r;
      });
  ASSERT_TRUE(server.ok());
  const std::string address = (*server)->address();
  const absl::Time deadline = absl::Now() + absl::Seconds(3);
  {  // an oversize length: the connection is closed without a reply
    absl::StatusOr<UniqueFd> fd = ConnectTcp(address, deadline);
    ASSERT_TRUE(fd.ok());
    const unsigned char huge[4] = {0xff, 0xff, 0xff, 0x7f};
    ASSERT_TRUE(SendAll(fd->get(), huge, 4, deadline).ok());
    char byte;
    EXPECT_LE(::recv(fd->get(), &byte, 1, 0), 0);
  }
  {  // a frame that is not a request: an error response
    absl::StatusOr<UniqueFd> fd = ConnectTcp(address, deadline);
    ASSERT_TRUE(fd.ok());
    ASSERT_TRUE(WriteFrame(fd->get(), "\xff\xff\xff", deadline).ok());
    absl::StatusOr<std::string> reply = ReadFrame(fd->get(), deadline);
    ASSERT_TRUE(reply.ok()) << reply.status();
    AdminResponse r;
    ASSERT_TRUE(r.ParseFromString(*reply));
    EXPECT_NE(r.error().find("does not parse"), std::string::npos) << r.error();
  }
  AdminRequest wrong_format;
  wrong_format.set_format(kAdminFormat + 1);
  EXPECT_FALSE(AdminCall(address, wrong_format).ok());
  EXPECT_EQ(Stats(address).stats().node_id(), 7u) << "still serving";
}

TEST_F(NodeTest, ZooKeeperNodeJoinsAndIsPrimaryOfItsRegion) {
  absl::StatusOr<std::unique_ptr<farm::testing::ZkTestServer>> zk = farm::testing::ZkTestServer::Start();
  ASSERT_TRUE(zk.ok()) << zk.status();
  std::vector<std::unique_ptr<Node>> nodes;
  for (NodeId id : {4u, 9u}) {
    NodeOptions o = BaseOptions(id, dir_);
    o.zookeeper = (*zk)->address();
    o.fabric = "tcp";
    absl::StatusOr<std::unique_ptr<Node>> n = Node::Create(o);
    ASSERT_TRUE(n.ok()) << n.status();
    ASSERT_TRUE((*n)->Start().ok());
    nodes.push_back(std::move(*n));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  // Both learn of the configuration with both: the joiner allocates below.
  auto members = [](Node& n) {
    std::shared_ptr<const membership::Configuration> c = n.membership().current();
    return c == nullptr ? size_t{0} : c->members.size();
  };
  while ((members(*nodes[0]) < 2 || members(*nodes[1]) < 2) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  auto config = nodes[0]->membership().current();
  ASSERT_EQ(config->members.size(), 2u);
  absl::StatusOr<membership::Placement> placement = membership::Placement::Create(*config);
  ASSERT_TRUE(placement.ok());
  // A region created under this configuration has its creator as primary. The joiner
  // serves once its node applies the configuration (after membership reports it):
  // until then the allocation is refused as retryable, and a caller retries.
  absl::StatusOr<FatPtr> object = AllocateOn(*nodes[1], 100);
  while (absl::IsUnavailable(object.status()) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
    object = AllocateOn(*nodes[1], 100);
  }
  ASSERT_TRUE(object.ok()) << object.status();
  absl::StatusOr<membership::ReplicaSet> set = placement->Lookup(object->addr.region());
  ASSERT_TRUE(set.ok());
  EXPECT_EQ(set->primary(), 9u);
  EXPECT_NE(nodes[0]->backups().Find(object->addr.region()), nullptr)
      << "the other member holds a backup copy";
  EXPECT_EQ(set->size(), 2u) << "r=3 with two members: both";
  const AdminResponse r = Stats(nodes[0]->admin_address());
  EXPECT_EQ(r.stats().session(), "connected");
  EXPECT_EQ(r.stats().epoch(), config->epoch);
  for (auto& n : nodes) n->Stop();
}

}  // namespace
}  // namespace farm::node
