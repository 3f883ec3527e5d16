// Membership against a real ZooKeeper server: agreement, failure detection, manager
// fail-over, rejection of bad configurations, fencing on session loss, bounded errors.
#include "membership/zk_membership.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "membership/lease_clock.h"
#include "membership/configuration.pb.h"
#include "tests/support/zk_test_server.h"

namespace farm::membership {
namespace {

using farm::testing::ZkTestServer;

struct HeldSurvivor;  // below

bool WaitFor(const std::function<bool()>& pred, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (absl::Now() < deadline) {
    if (pred()) return true;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return pred();
}

class ZkMembershipTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<ZkTestServer>> zk = ZkTestServer::Start();
    ASSERT_TRUE(zk.ok()) << zk.status();
    zk_ = std::move(*zk).release();
  }
  static void TearDownTestSuite() { delete zk_; }

  void SetUp() override {
    cluster_ = absl::StrCat(::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  ZkMembershipOptions Options(NodeId id) {
    ZkMembershipOptions o;
    o.zookeeper = zk_->address();
    o.cluster = cluster_;
    o.self.id = id;
    o.self.host = "test-host";
    o.self.fabric_addresses["tcp"] = absl::StrCat("tcp:127.0.0.1:", 9000 + id);
    o.self.threads = 1;
    o.self.incarnation = 1000 + id;
    o.replication = 2;
    o.session_timeout = absl::Seconds(1);
    o.connect_timeout = absl::Seconds(5);
    o.join_timeout = absl::Seconds(15);
    return o;
  }

  std::unique_ptr<ZkMembership> Join(NodeId id) {
    absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(Options(id));
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return nullptr;
    absl::Status s = (*m)->Start(nullptr);
    EXPECT_TRUE(s.ok()) << s;
    return std::move(*m);
  }

  // A member started with `o` (ASSERT-style: null on failure).
  std::unique_ptr<ZkMembership> JoinWith(const ZkMembershipOptions& o) {
    absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(o);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return nullptr;
    absl::Status s = (*m)->Start(nullptr);
    EXPECT_TRUE(s.ok()) << s;
    return s.ok() ? std::move(*m) : nullptr;
  }

  // A compute-only member, node 10: the first to join manages.
  std::unique_ptr<ZkMembership> ComputeManager() {
    ZkMembershipOptions o = Options(10);
    o.self.compute_only = true;
    return JoinWith(o);
  }

  // Whether node `id`'s removal marker exists (nullopt: ZooKeeper did not answer).
  std::optional<bool> Marked(NodeId id) {
    std::unique_ptr<ZkClient> raw = RawClient();
    if (raw == nullptr) return std::nullopt;
    absl::StatusOr<bool> exists = raw->Exists(absl::StrCat(ZkMembership::Root(cluster_), "/removed/", id), false);
    EXPECT_TRUE(exists.ok()) << exists.status();
    if (!exists.ok()) return std::nullopt;
    return *exists;
  }

  // Nodes 10, 1 and 2 agree; node 2's events are held; node 1 stops and the manager
  // publishes the configuration without it. Null after a failed check.
  std::unique_ptr<HeldSurvivor> StopNode1WithNode2Held();

  static std::vector<NodeId> Ids(const ZkMembership& m) {
    std::vector<NodeId> ids;
    if (auto c = m.current()) {
      for (const Member& member : c->members) ids.push_back(member.id);
    }
    return ids;
  }

  // All of `nodes` hold the same configuration with exactly `ids`.
  static bool Agree(const std::vector<ZkMembership*>& nodes, const std::vector<NodeId>& ids) {
    uint64_t epoch = 0;
    for (ZkMembership* n : nodes) {
      auto c = n->current();
      if (c == nullptr || Ids(*n) != ids || (epoch != 0 && c->epoch != epoch)) return false;
      epoch = c->epoch;
    }
    return true;
  }

  std::unique_ptr<ZkClient> RawClient() {
    ZkClient::Options o;
    o.hosts = zk_->address();
    absl::StatusOr<std::unique_ptr<ZkClient>> c = ZkClient::Connect(o, nullptr);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? std::move(*c) : nullptr;
  }

  // A seam that stops ZooKeeper for 3 s, less than a 4 s session's timeout, but long
  // enough for a request then to time out on the client (2/3 of the timeout); *resume
  // is the thread that starts it again (join it).
  static std::function<void()> StallZooKeeper(std::thread* resume) {
    return [resume] {
      zk_->Pause();
      *resume = std::thread([] {
        absl::SleepFor(absl::Seconds(3));
        zk_->Resume();
      });
    };
  }

  static ZkTestServer* zk_;
  std::string cluster_;
};

ZkTestServer* ZkMembershipTest::zk_ = nullptr;

TEST_F(ZkMembershipTest, MembersAgreeOnOneConfigurationWithOneManager) {
  auto a = Join(1), b = Join(2), c = Join(3);
  ASSERT_TRUE(a && b && c);
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get(), c.get()}, {1, 2, 3}); }));
  int managers = 0;
  for (ZkMembership* m : {a.get(), b.get(), c.get()}) {
    managers += m->status().manager ? 1 : 0;
    EXPECT_TRUE(m->gate().serving());
    EXPECT_EQ(m->current()->replication, 2u);
    EXPECT_TRUE(m->gate().Check(m->current()->epoch).ok());
    EXPECT_FALSE(m->gate().Check(m->current()->epoch - 1).ok());
  }
  EXPECT_EQ(managers, 1);
  EXPECT_EQ(a->current()->manager, 1u);  // the first to join manages
}

TEST_F(ZkMembershipTest, ALeavingMemberIsRemovedInTheNextEpoch) {
  auto a = Join(1), b = Join(2), c = Join(3);
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get(), c.get()}, {1, 2, 3}); }));
  const uint64_t before = a->current()->epoch;
  c->Stop();
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get()}, {1, 2}); }));
  EXPECT_GT(a->current()->epoch, before);
  EXPECT_EQ(b->gate().Check(before).code(), absl::StatusCode::kFailedPrecondition)
      << "requests of an epoch the cluster has left are refused";
}

TEST_F(ZkMembershipTest, ANewManagerTakesOverWhenTheManagerFails) {
  auto a = Join(1), b = Join(2), c = Join(3);
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get(), c.get()}, {1, 2, 3}); }));
  ASSERT_TRUE(a->status().manager);
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return Agree({b.get(), c.get()}, {2, 3}); }));
  EXPECT_EQ(b->current()->manager, 2u);
  EXPECT_TRUE(b->status().manager);
  EXPECT_FALSE(c->status().manager);
  // And a node that joins later is added by the new manager.
  auto d = Join(4);
  ASSERT_TRUE(d);
  EXPECT_TRUE(WaitFor([&] { return Agree({b.get(), c.get(), d.get()}, {2, 3, 4}); }));
}

TEST_F(ZkMembershipTest, CorruptOrUnknownConfigurationsAreRejectedNeverApplied) {
  auto a = Join(1), b = Join(2);
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get()}, {1, 2}); }));
  const auto before = b->current();
  auto raw = RawClient();
  ASSERT_TRUE(raw);
  const std::string path = ZkMembership::Root(cluster_) + "/config";

  // A configuration of an unknown format: rejected by name, then healed by the manager.
  Configuration future_config = *before;
  future_config.epoch += 100;
  absl::StatusOr<std::string> encoded = EncodeConfiguration(future_config);
  ASSERT_TRUE(encoded.ok());
  Envelope future;
  ASSERT_TRUE(future.ParseFromString(*encoded));
  future.set_format(kConfigurationFormat + 1);
  ASSERT_TRUE(raw->Set(path, future.SerializeAsString(), -1).ok());
  ASSERT_TRUE(WaitFor([&] {
    return b->status().last_error.find("format") != std::string::npos;
  })) << b->status().last_error;
  // Never applied: epochs only move by one from the last good configuration.
  ASSERT_TRUE(WaitFor([&] { return b->current()->epoch == before->epoch + 1; }));
  EXPECT_EQ(Ids(*b), (std::vector<NodeId>{1, 2}));

  // Garbage bytes: the same.
  ASSERT_TRUE(raw->Set(path, "\x08\xff\xff garbage", -1).ok());
  ASSERT_TRUE(WaitFor([&] { return b->current()->epoch == before->epoch + 2; }));
  EXPECT_TRUE(Agree({a.get(), b.get()}, {1, 2}));
  EXPECT_TRUE(b->gate().serving());
}

TEST_F(ZkMembershipTest, ARegistrationThatTimesOutIsTriedAgainAndKnownAsItsOwnIfItWasApplied) {
  // ZooKeeper stops answering as the node registers (as a loaded server does), for less
  // than the session timeout: the create times out on the client, and the server may
  // still apply it once it runs again. Start must register all the same.
  ZkMembershipOptions o = Options(1);
  o.session_timeout = absl::Seconds(4);
  std::thread resume;
  o.before_register = StallZooKeeper(&resume);
  absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::Status started = (*m)->Start(nullptr);
  if (resume.joinable()) resume.join();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_TRUE(WaitFor([&] { return Agree({m->get()}, {1}); }, absl::Seconds(20))) << (*m)->status().last_error;
}

// The same for the election znode, created right after (a flake of the test above,
// when the server stalled again then): a sequential create that timed out may have been
// applied, so the node looks for its own before it creates another. It ends with one
// election znode, its own, and manages the cluster it is alone in.
TEST_F(ZkMembershipTest, AnElectionNodeWhoseCreateTimesOutIsFoundOrMadeOnce) {
  ZkMembershipOptions o = Options(1);
  o.session_timeout = absl::Seconds(4);
  std::thread resume;
  o.before_election = StallZooKeeper(&resume);
  absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  const absl::Status started = (*m)->Start(nullptr);
  if (resume.joinable()) resume.join();
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_TRUE(WaitFor([&] { return Agree({m->get()}, {1}) && (*m)->status().manager; }, absl::Seconds(20)))
      << (*m)->status().last_error;
  std::unique_ptr<ZkClient> raw = RawClient();
  ASSERT_TRUE(raw);
  absl::StatusOr<std::vector<std::string>> candidates =
      raw->GetChildren(absl::StrCat(ZkMembership::Root(cluster_), "/election"), false);
  ASSERT_TRUE(candidates.ok()) << candidates.status();
  EXPECT_EQ(candidates->size(), 1u) << "one session, one election znode";
}

TEST_F(ZkMembershipTest, LosingZooKeeperFencesUntilRejoined) {
  auto a = Join(1), b = Join(2);
  ASSERT_TRUE(WaitFor([&] { return Agree({a.get(), b.get()}, {1, 2}); }));
  const uint64_t before = a->current()->epoch;
  const int64_t paused_ns = LeaseClockNowNs();
  zk_->Pause();  // a partition from ZooKeeper: sockets stay open, nothing answers
  const bool fenced = WaitFor([&] { return !a->gate().serving() && !b->gate().serving(); },
                              absl::Seconds(5));
  // The lease ended before the server could expire the session: the server last heard
  // from each node before the pause, and expires a session no sooner than its timeout
  // (1 s) after that. The deadline is the gate's own, so this holds however late this
  // thread noticed.
  for (ZkMembership* m : {a.get(), b.get()}) {
    EXPECT_LT(m->gate().lease_deadline_ns() - paused_ns, absl::ToInt64Nanoseconds(absl::Seconds(1)))
        << "the lease outlived the earliest moment the session could expire";
  }
  EXPECT_EQ(a->gate().Check(before).code(), absl::StatusCode::kUnavailable) << "writes refused";
  // Stay cut off past the session timeout. Whether the server then expires the sessions
  // or the clients' reconnection wins the race to revalidate them is up to the server's
  // threads after SIGCONT; both outcomes must end with both nodes serving again: in the
  // same epoch (sessions survived) or in a later one (expired, rejoined).
  absl::SleepFor(absl::Seconds(2));
  zk_->Resume();
  ASSERT_TRUE(fenced) << "a node cut off from ZooKeeper must fence within its session timeout";
  ASSERT_TRUE(WaitFor([&] {
    return Agree({a.get(), b.get()}, {1, 2}) && a->gate().serving() && b->gate().serving();
  }, absl::Seconds(20))) << a->status().last_error;
  std::printf("after the partition: epoch %lu (was %lu): sessions %s\n",
              static_cast<unsigned long>(a->current()->epoch), static_cast<unsigned long>(before),
              a->current()->epoch > before ? "expired and rejoined" : "survived");
}

// The lease must not depend on any thread reporting the loss in time. Here the ZooKeeper
// client's completion thread (which delivers session events and heartbeat answers)
// stalls at the first event after a partition, the "connection lost" report: the node
// still fences before the session could expire.
TEST_F(ZkMembershipTest, ALeaseRunsOutWhenTheZooKeeperClientsThreadStalls) {
  std::atomic<bool> stall{false};
  absl::Notification release;
  ZkMembershipOptions o = Options(1);
  o.on_zookeeper_event = [&] {
    if (stall.load()) release.WaitForNotification();
  };
  absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(o);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->Start(nullptr).ok());
  // However this test ends, the stalled thread goes on before the membership closes.
  struct Release {
    absl::Notification& n;
    ~Release() {
      if (!n.HasBeenNotified()) n.Notify();
    }
  } release_at_exit{release};
  ASSERT_TRUE(WaitFor([&] { return (*m)->gate().serving(); }));
  stall.store(true);
  const int64_t paused_ns = LeaseClockNowNs();
  zk_->Pause();
  const bool fenced = WaitFor([&] { return !(*m)->gate().serving(); }, absl::Seconds(3));
  const int64_t deadline_ns = (*m)->gate().lease_deadline_ns();
  zk_->Resume();
  release.Notify();
  ASSERT_TRUE(fenced) << "a node whose ZooKeeper client thread stalls kept serving after a partition";
  EXPECT_LT(deadline_ns - paused_ns, absl::ToInt64Nanoseconds(absl::Seconds(1)));
  EXPECT_TRUE(WaitFor([&] { return (*m)->gate().serving(); }, absl::Seconds(20)))
      << "serving again once ZooKeeper answers: " << (*m)->status().last_error;
}

// Removal markers say that a member's data went stale because the others ran on
// without it. When every member holding data fails at once and only a compute-only
// manager remains, nothing ran on: the members restart on their data (a cold start).
// (A manager wrote markers then, and the kill-all test's nodes refused to start.)
TEST_F(ZkMembershipTest, NoMemberIsMarkedRemovedWhenNoMemberHoldingDataRemains) {
  std::atomic<bool> stall{false};
  absl::Notification release;
  ZkMembershipOptions compute = Options(10);
  compute.self.compute_only = true;
  compute.failover_active = [] { return true; };
  compute.on_zookeeper_event = [&] {
    if (stall.load()) release.WaitForNotification();
  };
  absl::StatusOr<std::unique_ptr<ZkMembership>> manager = ZkMembership::Create(compute);
  ASSERT_TRUE(manager.ok());
  ASSERT_TRUE((*manager)->Start(nullptr).ok());
  struct Release {
    absl::Notification& n;
    ~Release() {
      if (!n.HasBeenNotified()) n.Notify();
    }
  } release_at_exit{release};
  auto a = Join(1), b = Join(2);
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(WaitFor([&] { return Agree({manager->get(), a.get(), b.get()}, {1, 2, 10}); }));
  ASSERT_TRUE((*manager)->status().manager);
  // Events that reached the manager before the stall (the joiners' election nodes, its
  // own configuration's) are handled first: each reads the members again, and one
  // handled after the first Stop below saw node 2 still there (a rightful marker).
  absl::SleepFor(absl::Milliseconds(300));
  // Both go at once, as far as the manager can tell: it hears of the first departure
  // (its ZooKeeper events wait) only once the second has happened too. (One after the
  // other, the first is rightly marked: the second ran on without it.)
  stall.store(true);
  a->Stop();
  b->Stop();
  absl::SleepFor(absl::Milliseconds(100));
  release.Notify();
  ASSERT_TRUE(WaitFor([&] { return Agree({manager->get()}, {10}); }));
  // Back on their data directories, they join.
  ZkMembershipOptions again = Options(1);
  again.self.incarnation = 5001;
  again.holds_data = true;
  absl::StatusOr<std::unique_ptr<ZkMembership>> back = ZkMembership::Create(again);
  ASSERT_TRUE(back.ok());
  absl::Status started = (*back)->Start(nullptr);
  EXPECT_TRUE(started.ok()) << "a member was marked removed with no member holding data left: " << started;
}

// Holds a member's ZooKeeper events (and so its synchronous calls: the C client
// completes them on the same thread) while stalled: it applies nothing meanwhile.
struct EventStall {
  std::atomic<bool> on{false};
  absl::Notification release;
  ~EventStall() { Release(); }
  void Release() {
    if (!release.HasBeenNotified()) release.Notify();
  }
  std::function<void()> Seam() {
    return [this] {
      if (on.load()) release.WaitForNotification();
    };
  }
};

// A compute-only manager (node 10) and node 2, whose ZooKeeper events are held from the
// moment node 1 has stopped: the manager has published the configuration without node
// 1, and node 2 has applied nothing since.
struct HeldSurvivor {
  EventStall stall;
  std::unique_ptr<ZkMembership> manager, survivor;
  ~HeldSurvivor() {
    stall.Release();  // before node 2 stops: its ZooKeeper thread must not be held then
    survivor.reset();
    manager.reset();
  }
};

std::unique_ptr<HeldSurvivor> ZkMembershipTest::StopNode1WithNode2Held() {
  auto held = std::make_unique<HeldSurvivor>();
  held->manager = ComputeManager();
  auto a = Join(1);
  ZkMembershipOptions survivor = Options(2);
  survivor.on_zookeeper_event = held->stall.Seam();
  held->survivor = JoinWith(survivor);
  if (!held->manager || !a || !held->survivor) return nullptr;
  ZkMembership* b = held->survivor.get();
  if (!WaitFor([&] { return Agree({held->manager.get(), a.get(), b}, {1, 2, 10}); })) return nullptr;
  absl::SleepFor(absl::Milliseconds(300));  // node 2 handles the events queued so far
  held->stall.on.store(true);
  a->Stop();
  if (!WaitFor([&] { return Agree({held->manager.get()}, {2, 10}); })) return nullptr;
  return held;
}

// A marker is written by a survivor that runs on without the member, before it acts on
// that configuration, never by the manager that published it: while the only survivor
// holding data has not applied the configuration, nothing moved on.
TEST_F(ZkMembershipTest, ASurvivorMarksADepartedMemberBeforeItAppliesTheConfiguration) {
  std::unique_ptr<HeldSurvivor> held = StopNode1WithNode2Held();
  ASSERT_TRUE(held);
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_EQ(Marked(1), false) << "node 1 was marked removed before any member holding data ran on without it";
  held->stall.Release();
  ASSERT_TRUE(WaitFor([&] { return Agree({held->manager.get(), held->survivor.get()}, {2, 10}); }));
  EXPECT_EQ(Marked(1), true) << "node 2 applied a configuration without node 1 and left no marker";
}

// A survivor whose failover was not active yet when a member left (it was still
// starting) fails over in a later configuration: it marks the member then, before it
// promotes that member's regions.
TEST_F(ZkMembershipTest, ASurvivorMarksAMemberThatLeftBeforeItsFailoverWasActive) {
  auto manager = ComputeManager();
  auto a = Join(1);
  std::atomic<bool> active{false};
  ZkMembershipOptions survivor = Options(2);
  survivor.failover_active = [&] { return active.load(); };
  auto b = JoinWith(survivor);
  ASSERT_TRUE(manager && a && b);
  ASSERT_TRUE(WaitFor([&] { return Agree({manager.get(), a.get(), b.get()}, {1, 2, 10}); }));
  a->Stop();
  ASSERT_TRUE(WaitFor([&] { return Agree({manager.get(), b.get()}, {2, 10}); }));
  EXPECT_EQ(Marked(1), false) << "marked by a member whose failover was not active";
  active.store(true);
  auto c = Join(3);
  ASSERT_TRUE(c);
  ASSERT_TRUE(WaitFor([&] { return Agree({manager.get(), b.get(), c.get()}, {2, 3, 10}); }));
  EXPECT_EQ(Marked(1), true) << "node 2 failed over without node 1 and left no marker";
}

// A node restarted on its data before its old session expired passes the check at
// registration (nobody has marked it yet), but a survivor runs on without it meanwhile:
// the first configuration that lists it finds the marker, and it refuses to join.
TEST_F(ZkMembershipTest, ANodeRestartedBeforeItsOldSessionEndedIsRefusedOnceASurvivorRanOn) {
  auto manager = ComputeManager();
  auto a = Join(1), b = Join(2);
  ASSERT_TRUE(manager && a && b);
  ASSERT_TRUE(WaitFor([&] { return Agree({manager.get(), a.get(), b.get()}, {1, 2, 10}); }));
  ZkMembershipOptions again = Options(1);
  again.self.incarnation = 5001;
  again.holds_data = true;
  bool ran_on = false;
  // Between the check at registration and the registration: the old process goes, and
  // the survivor applies the configuration without it.
  again.before_register = [&] {
    a->Stop();
    ran_on = WaitFor([&] { return Agree({b.get()}, {2, 10}); });
  };
  absl::StatusOr<std::unique_ptr<ZkMembership>> back = ZkMembership::Create(again);
  ASSERT_TRUE(back.ok());
  absl::Status started = (*back)->Start(nullptr);
  ASSERT_TRUE(ran_on);
  EXPECT_EQ(started.code(), absl::StatusCode::kFailedPrecondition) << started;
  EXPECT_NE(started.message().find("was removed from cluster"), std::string::npos) << started;
  EXPECT_FALSE((*back)->gate().serving());
  // It left: the survivors go on without it.
  EXPECT_TRUE(WaitFor([&] { return Agree({manager.get(), b.get()}, {2, 10}); }));
}

// A survivor that missed the configuration without a member, and applies the next one,
// where the member is back as another process, did not run on without it: no marker,
// and the member, restarted on its data, joins.
TEST_F(ZkMembershipTest, AMemberBackBeforeASurvivorRanOnWithoutItIsNotMarked) {
  std::unique_ptr<HeldSurvivor> held = StopNode1WithNode2Held();
  ASSERT_TRUE(held);
  ZkMembershipOptions again = Options(1);
  again.self.incarnation = 5001;
  again.holds_data = true;
  auto back = JoinWith(again);
  ASSERT_TRUE(back) << "no member holding data ran on without node 1";
  held->stall.Release();
  ZkMembership* b = held->survivor.get();
  ASSERT_TRUE(WaitFor([&] { return Agree({held->manager.get(), back.get(), b}, {1, 2, 10}); }));
  EXPECT_EQ(b->current()->Find(1)->incarnation, 5001u);
  EXPECT_EQ(Marked(1), false) << "node 2 skipped the configuration without node 1, yet marked it";
}

// A data member back under its id as a compute-only one holds no regions: placement
// moves its regions to the survivors, which mark it as if it had left (restarted on its
// old data as a data member, it must refuse).
TEST_F(ZkMembershipTest, ADataMemberBackAsComputeOnlyIsMarked) {
  std::unique_ptr<HeldSurvivor> held = StopNode1WithNode2Held();
  ASSERT_TRUE(held);
  ZkMembershipOptions compute = Options(1);
  compute.self.incarnation = 5001;
  compute.self.compute_only = true;
  auto back = JoinWith(compute);
  ASSERT_TRUE(back);
  held->stall.Release();
  ZkMembership* b = held->survivor.get();
  ASSERT_TRUE(WaitFor([&] { return Agree({held->manager.get(), back.get(), b}, {1, 2, 10}); }));
  EXPECT_EQ(Marked(1), true) << "node 2 ran on with node 1's regions, yet left no marker";
}

TEST_F(ZkMembershipTest, ASecondLiveProcessWithTheSameIdIsRefused) {
  auto a = Join(1);
  ASSERT_TRUE(a);
  ZkMembershipOptions o = Options(1);
  o.self.incarnation = 999;
  absl::StatusOr<std::unique_ptr<ZkMembership>> dup = ZkMembership::Create(o);
  ASSERT_TRUE(dup.ok());
  absl::Status s = (*dup)->Start(nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists) << s;
  EXPECT_TRUE(a->gate().serving());
}

TEST_F(ZkMembershipTest, UnreachableZooKeeperIsABoundedClearError) {
  ZkMembershipOptions o = Options(1);
  o.zookeeper = "127.0.0.1:1";  // nothing listens there
  o.connect_timeout = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<ZkMembership>> m = ZkMembership::Create(o);
  ASSERT_TRUE(m.ok());
  const absl::Time start = absl::Now();
  absl::Status s = (*m)->Start(nullptr);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_NE(s.message().find("127.0.0.1:1"), std::string::npos) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  ZkClient::Options bad;
  bad.hosts = "no-port-here";
  EXPECT_EQ(ZkClient::Connect(bad, nullptr).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace farm::membership
