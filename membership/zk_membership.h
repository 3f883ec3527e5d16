// ZkMembership: configurations kept in ZooKeeper (paper section 3.3).
//
// Layout under /farm/<cluster>:
//   members/<node id>   ephemeral, a RegistrationProto: this node is alive and how to
//                       reach it. It vanishes when the node's session ends.
//   election/m-<seq>    ephemeral sequential, "<node id>/<session>"; the owner of
//                       the lowest is the configuration manager (CM).
//   config              persistent, a ConfigurationProto: the current configuration.
//   removed/<node id>   persistent, a removal marker: the cluster ran on without that
//                       member, so the data it holds is stale (below).
//
// The CM keeps `config` equal to the registered member set: on every change it
// publishes epoch + 1 with one atomic multi-op that checks its own election node (so a
// deposed CM cannot publish) and the config's znode version (so two publishers cannot
// both win). Every node watches `config` and applies each newer epoch in order; a
// configuration that does not decode or validate is rejected with an error and the
// node keeps the one it had.
//
// Removal markers. A member that holds data, is up with failover active, and applies a
// configuration that lacks a data-holding member it has seen (in any configuration it
// applied, also one before failover was active), or lists it only as compute-only (so
// placing nothing on it), marks that member removed — before it acts on the
// configuration (fails over), in one multi-op that checks the configuration's znode
// version (so it marks only while the configuration is current, all or none; else it
// reads the newer one). So a member is marked only if a survivor
// really ran on without it: when every data node fails at once, none is.
// A node restarting on its data checks its marker before it registers, and again when
// the first configuration lists it: any survivor that ran on without it marked it before
// that configuration was published, so the second check sees the marker even when the
// node restarted before its old session had expired.
//
// Leases: the ZooKeeper session is the lease. The server expires a session no sooner
// than the session timeout T after it last heard from the client, and the manager then
// removes the node. The client heartbeats every T/10 (ZkClient), and each answer
// extends the gate's lease to 3/4 T after that heartbeat was *sent*: the server heard
// from us later than that, so the lease ends at least T/4 before the server may expire
// the session. Only an answer extends the lease; nothing has to report a loss, so a
// thread delayed by load (ours, the C client's) can shorten the lease, never lengthen
// it. A session is first leased from the moment its connection began. A node whose
// session expired rejoins with a new session, registers again and serves once a
// configuration lists it with that session. Stop fences at once.
//
// Threads: Start joins on the caller's thread, then one membership thread makes every
// ZooKeeper call; the C client's thread only extends the lease on the gate (lock-free)
// and queues events.
#ifndef FARM_MEMBERSHIP_ZK_MEMBERSHIP_H_
#define FARM_MEMBERSHIP_ZK_MEMBERSHIP_H_

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "farm/base/mutex.h"
#include "membership/membership.h"
#include "membership/zk_client.h"

namespace farm::membership {

struct ZkMembershipOptions {
  std::string zookeeper;  // "host:port[,host:port]"
  std::string cluster = "farm";
  Member self;            // id, addresses, capacity, threads, incarnation
  // Used when this node publishes the first configuration of the cluster; later
  // configurations keep the values of the first.
  uint32_t replication = 3;
  uint32_t virtual_rings = kDefaultVirtualRings;
  absl::Duration session_timeout = absl::Seconds(4);
  // Bound on reaching ZooKeeper at Start (and on each reconnection attempt).
  absl::Duration connect_timeout = absl::Seconds(10);
  // How long Start waits for a configuration that contains this node.
  absl::Duration join_timeout = absl::Seconds(30);
  // Tests only: runs just before the node registers (at Start, and when it rejoins): a
  // seam to make ZooKeeper slow at that moment.
  std::function<void()> before_register;
  // Tests only: runs just before the node creates its election znode (after it
  // registered): a seam to make ZooKeeper slow at that moment.
  std::function<void()> before_election;
  // Tests only: runs on the ZooKeeper client's completion thread before each event it
  // delivers is handled: a seam to stall that thread.
  std::function<void()> on_zookeeper_event;
  // After its session expired, register again with a new session (a member without data:
  // a compute-only one). A member that holds data does not: the cluster has moved its
  // regions on and its copies are stale, so it stays fenced, for good, and says so (it
  // rejoins when restarted with an empty data directory).
  bool rejoin_after_expiry = true;
  // This node starts on data of an earlier run (its data directory held regions). It
  // refuses to join (Start fails with FailedPrecondition) when the cluster removed it
  // while it ran on without it (a removal marker, above): that data is stale. A node
  // that starts without data clears its marker: it joins as a new member.
  bool holds_data = false;
  // Whether this node fails over (moves departed members' regions on) for the
  // configuration it is about to deliver: asked once for each one, just before
  // on_config, on the same thread, and the node must fail over for that configuration
  // exactly when it answered true. A member that holds data writes removal markers only
  // then. Empty: always.
  std::function<bool()> failover_active;
};

class ZkMembership final : public Membership {
 public:
  static absl::StatusOr<std::unique_ptr<ZkMembership>> Create(const ZkMembershipOptions& options);
  ~ZkMembership() override;

  // Errors: Unavailable when ZooKeeper cannot be reached within connect_timeout;
  // AlreadyExists when a live process holds this node id; DeadlineExceeded when no
  // configuration with this node appears within join_timeout.
  absl::Status Start(ConfigCallback on_config) override;
  void Stop() override;
  std::shared_ptr<const Configuration> current() const override;
  MembershipStatus status() const override;
  const ServingGate& gate() const override { return gate_; }

  // The ZooKeeper paths of a cluster (also used by the admin CLI).
  static std::string Root(absl::string_view cluster);

 private:
  explicit ZkMembership(const ZkMembershipOptions& options);

  void Run();
  // Opens a session and registers; on error the caller retries after a pause.
  absl::Status Join();
  absl::Status Register();
  // Creates this session's election znode (ephemeral sequential), once, through timeouts.
  absl::StatusOr<std::string> CreateElectionNode();
  // Removal markers (above): refuses a start on stale data (FailedPrecondition); written
  // by a survivor about to fail over in `next` (znode version `version`) for the data
  // members it saw that `next` lacks or lists as compute-only. FailedPrecondition from MarkDeparted: `config`
  // changed meanwhile. NoteMembers records a delivered configuration's members.
  absl::Status CheckNotRemoved();
  absl::Status MarkDeparted(const Configuration& next, int32_t version);
  void NoteMembers(const Configuration& applied);
  // Reads config, election and (as CM) members, re-arming their watches.
  void Refresh();
  absl::Status ReadConfig();
  absl::StatusOr<bool> IsManager();
  absl::Status Reconcile();
  void OnSessionEvent(const ZkEvent& event);
  void SetError(const absl::Status& status);
  void Log(const std::string& line) const;

  const ZkMembershipOptions options_;
  const std::string root_;
  ServingGate gate_;
  ConfigCallback on_config_;
  std::unique_ptr<ZkClient> client_;  // membership thread only (and Start before it)
  bool gave_up_ = false;  // membership thread only: expired and not rejoining
  std::string election_node_;         // our election znode's full path
  int32_t config_version_ = -1;       // znode version of the config we read; -1: none
  bool config_valid_ = false;         // that znode decoded: else the CM overwrites it
  // A newer configuration was read and not applied yet (its markers are not written):
  // as CM, publish nothing on the applied one meanwhile.
  bool config_pending_ = false;
  bool removal_checked_ = false;      // holds_data: the marker was checked once listed
  // Data members in the configurations delivered by this process, and those of them
  // absent now that are marked removed (membership thread only).
  absl::flat_hash_set<NodeId> seen_data_members_;
  absl::flat_hash_set<NodeId> marked_;
  std::thread thread_;

  mutable Mutex mu_;
  CondVar cv_;
  std::deque<ZkEvent> events_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::shared_ptr<const Configuration> config_ ABSL_GUARDED_BY(mu_);
  ZkSessionState session_ ABSL_GUARDED_BY(mu_) = ZkSessionState::kClosed;
  bool manager_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_);
  absl::Status refused_ ABSL_GUARDED_BY(mu_);  // a removal marker found once listed: Start fails
};

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_ZK_MEMBERSHIP_H_
