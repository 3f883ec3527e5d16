// Node: one FaRM node process's runtime — fabric, worker threads with their event
// loops, messaging, the allocator, membership and the admin port — composed from
// options.
//
// Start order: fabric (listening), worker loops, messenger with the allocation
// protocol's handlers (alloc/alloc_service.h), admin port, membership (join: blocks
// until a configuration includes this node), then links to every member. Each new
// configuration links the node to members it has not linked yet (on a connector
// thread; a slow peer never blocks the membership thread) and becomes the placement the
// allocator uses. Once every member is linked the node creates its first region (placed
// so that it is the primary, held by its backups); later regions come as blocks run out. Stop undoes it in reverse: leave
// membership first, so peers see the node go at once.
#ifndef FARM_NODE_NODE_H_
#define FARM_NODE_NODE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "absl/time/time.h"
#include "alloc/alloc_service.h"
#include "alloc/allocator.h"
#include "alloc/backup_regions.h"
#include "alloc/epoch.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "farm/node/admin.pb.h"
#include "farm/node/admin_server.h"
#include "farm/node/node_messages.h"
#include "farm/node/node_storage.h"
#include "farm/storage/node_log_types.h"
#include "membership/membership.h"
#include "tx/tx_service.h"

namespace farm::node {

// Message ids from here up to kFirstReservedMsgId are the applications' (services
// take theirs from their own range in farm/msg/message_ids.h).
inline constexpr MsgId kFirstApplicationMsgId = kApplicationMsgIds.first;

struct NodeOptions {
  NodeId node_id = 0;
  std::string cluster = "farm";
  std::string zookeeper;       // "host:port[,...]"; exclusive with static_members
  std::string static_members;  // "ID=BACKEND:ADDRESS,..." (membership/static_membership.h)
  std::string fabric = "auto";  // auto, shm, tcp, verbs
  std::string listen = "127.0.0.1:0";        // tcp fabric; verbs control socket
  std::string rdma_device;     // verbs: device name; empty for the first active one
  std::string admin_listen = "127.0.0.1:0";
  std::string data_dir;        // default ./farm-data/node-<id>
  // The log's promise (farm/storage/log_writer.h): always (the default), interval:MS,
  // none; or off: no log at all (in-process clusters of tools and tests).
  std::string log_sync = "always";
  // A checkpoint is taken once the log segments since the last one hold this many bytes,
  // or as many as the last checkpoint if that is more (checkpointer.h); 0: never.
  uint64_t checkpoint_bytes = 256ull << 20;
  storage::FileSystem* file_system = nullptr;  // null: the real disk (tests inject faults)
  std::string cluster_secret;
  std::string host_id;         // default: hostname and network namespace
  uint32_t threads = 2;
  uint64_t region_bytes = 2ull << 30;
  uint64_t capacity_bytes = 0;  // bytes of regions this node may be primary of; default: region_bytes
  // A member that runs applications but holds no regions (no primary or backup copies;
  // its allocations fail ResourceExhausted): an application process joining a running
  // cluster without moving its data. With static membership the member list must mark
  // this node ";compute" too.
  bool compute_only = false;
  uint32_t replication = 3;
  uint32_t virtual_rings = 100;
  absl::Duration session_timeout = absl::Seconds(4);
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration join_timeout = absl::Seconds(30);
  absl::Duration spin = absl::Microseconds(50);
  // The node creates its first region (and counts as linked) only in a configuration of
  // at least this many members that hold data. A cluster started node by node would
  // otherwise place its first regions among the nodes up first, and a later node that
  // joins the regions' replica sets would hold no copy of them until re-replication
  // (failover, not yet built): commits to them would fail. A node restarted on its data
  // waits the same way before it is first ready (services that decide cluster-wide
  // things at start, like kv's shard map, see every member). Later, smaller
  // configurations still reach services. 1: at once.
  uint32_t min_members = 1;
  tx::TxOptions tx;
  // The node's log failed for good (a failed sync: nothing it logs from then on can be
  // promised durable). A node that cannot log must not hold replicas, so it leaves the
  // cluster at once — its membership stops (with ZooKeeper the session closes: peers
  // fail over its regions and settle its commits from the copies that logged them) and
  // it serves nothing more — and then this runs, once, on a thread of the node's: the
  // process's owner stops the node (farm_node exits non-zero). It must not call Stop
  // itself. Null: the node stays out of the cluster until stopped.
  std::function<void(const absl::Status&)> on_log_failure;
  // Test seam (test_faults.h, hold-region-copies): re-replication sends no copy.
  bool hold_region_copies = false;
};

// Checks options and fills defaults; the error names the offending option.
absl::StatusOr<NodeOptions> ResolveNodeOptions(NodeOptions options);
// The fabric backend `auto` resolves to, and why (logged at start): with a static member
// list, its locators' scheme (verbs or shm when all agree, else tcp); otherwise verbs
// when `rdma_devices` (those with an active port: ActiveRdmaDevices()) is not empty,
// else shm when the ZooKeeper ensemble is on loopback (every member on this host), else
// tcp. A forced backend is kept.
struct BackendChoice {
  std::string backend;
  std::string reason;
};
BackendChoice ResolveBackend(const NodeOptions& options, absl::Span<const std::string> rdma_devices);
// This machine's identity for shm eligibility: hostname plus network namespace.
std::string DefaultHostId();

class Node {
 public:
  static absl::StatusOr<std::unique_ptr<Node>> Create(const NodeOptions& options);
  ~Node();

  // Registers an application's message handler (msgRegisterHandler), before Start.
  // InvalidArgument for an id the node's own protocols use (below
  // kFirstApplicationMsgId); AlreadyExists, naming both registrants, for an id
  // registered already; FailedPrecondition after Start.
  absl::Status RegisterHandler(MsgId id, MessageHandler handler, absl::string_view registrant = "");

  absl::Status Start();
  void Stop();  // idempotent
  // The log's failure for good, if it failed (once the node runs, it has then left the
  // cluster: NodeOptions::on_log_failure) — during Start or Stop too; OK otherwise.
  absl::Status log_failure() const;

  NodeStats Stats() const;
  // True once the node has linked to every member of a configuration and holds its
  // first region (replicated to its backups): allocations can succeed. Services that
  // allocate at start (kv's shards) wait for it. A compute-only node holds no region:
  // linked to every member is enough.
  bool linked() const { return linked_.load(std::memory_order_acquire); }

  // A hosted service's counters for the admin port's stats (farm_admin stats): `source`
  // is called from the admin thread, so it must be thread-safe and quick. Replaces an
  // earlier source of the same name; RemoveServiceCounters before what it reads is gone.
  using CounterSource = std::function<std::vector<std::pair<std::string, uint64_t>>()>;
  void AddServiceCounters(const std::string& service, CounterSource source);
  void RemoveServiceCounters(const std::string& service);
  // Hosted services hear configuration changes: `listener` runs on the node's connector
  // thread once for each configuration the node has linked to every member of (and
  // holds a region in), epochs ascending; a service that was installed later hears the
  // next one. Before Start. Listeners must be quick and must not call into the Node.
  using ConfigurationListener = std::function<void(uint64_t epoch, const std::vector<NodeId>& members)>;
  absl::Status AddConfigurationListener(ConfigurationListener listener);
  // A service's small durable value on this node (farm/api/host.h): the last one put
  // under `name`, from this run or (replayed from the log) an earlier one.
  std::optional<std::string> Metadata(const std::string& name) const;
  // `done` once durable (on the log's thread, or at once without a log): then
  // Metadata(name) returns it. InvalidArgument over tx::kMaxMetadataBytes.
  void PutMetadata(const std::string& name, std::string value, absl::AnyInvocable<void(absl::Status)> done);
  // The log's state for farm_admin.
  LogState log_state() const { return storage_->State(); }
  // Takes a checkpoint of the log now (tests; a background thread takes them by itself).
  absl::Status CheckpointNow() { return storage_->CheckpointNow(); }
  const NodeOptions& options() const { return options_; }
  membership::Membership& membership() const { return *membership_; }
  Messenger& messenger() const { return *messenger_; }
  Fabric& fabric() const { return *fabric_; }
  const std::string& admin_address() const { return admin_->address(); }
  // The allocator and its per-thread side (after Start). Thread i's allocator is used
  // only on loop(i)'s thread.
  alloc::Allocator& allocator() const { return *allocator_; }
  alloc::AllocService& alloc_service() const { return *alloc_service_; }
  alloc::BackupRegions& backups() const { return *backups_; }
  EventLoop& loop(size_t i) const { return loops_[i]->loop(); }
  // Thread i's transaction context (after Start), used only on loop(i)'s thread.
  tx::ThreadContext& context(size_t i) const { return *tx_service_->context(i); }
  size_t thread_count() const { return loops_.size(); }

 private:
  Node(const NodeOptions& options, std::unique_ptr<NodeStorage> storage);
  class AllocEnvironment;
  absl::Status CreateMembership();
  absl::Status CreateAllocator();
  void OnConfiguration(std::shared_ptr<const membership::Configuration> config);
  void ConnectLoop();
  // Has thread 0 create this node's first region; waits for it (connector thread).
  absl::Status CreateFirstRegion();
  // Restart: the node's own regions, rebuilt from its log, go to the allocator; then
  // thread 0 settles the transactions the crash left in doubt (connector thread).
  absl::Status AdoptRecoveredRegions();
  // Before that: the single-machine commits a crash caught in replication, made all or
  // nothing across the replicas of this node's regions (restart_reconcile.cc).
  // Unavailable while a backup does not answer (connector thread).
  absl::Status ReconcileRecoveredRegions(const membership::Placement& placement);
  void SetPlacementLocked(std::shared_ptr<const membership::Placement> placement)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The log failed for good: leaves the cluster on fail_stop_ (NodeOptions::
  // on_log_failure). Called with the log's locks held.
  void LeaveOnLogFailure(const absl::Status& failure);

  // --- Failover (failover.cc) ---
  // Before `next` (of `config`) is used, after `previous` (of `previous_config`): fences
  // every thread when members left (tx::ThreadContext::FenceForFailover), promotes the
  // backup copies this node is now primary of (their allocator is rebuilt by the scan),
  // and freezes each region of this node that a backup must receive a copy of, until
  // ReplicatePending has sent it. True when threads have transactions to recover.
  bool PrepareFailover(const membership::Configuration& previous_config, const membership::Configuration& config,
                       const membership::Placement& previous, const membership::Placement& next);
  // Connector thread: sends each frozen region to the backups that lack it, once no lock
  // is held on it, then unfreezes it. False while copies remain to send.
  bool ReplicatePending();
  bool RegionDrained(RegionId region);
  // Appends a region record of `type` (the kRegionCreated payload naming this node);
  // with `wait`, returns once it is durable.
  absl::Status LogRegionRecord(storage::NodeLogType type, RegionId region, uint64_t bytes, bool wait);
  // Logs the copies of `region` still due (kRegionCopiesDue; empty: none), so that a
  // restart resumes them; `wait`: until durable.
  absl::Status LogCopiesDue(RegionId region, const std::vector<NodeId>& nodes, bool wait);
  absl::Status AppendRegionRecord(storage::NodeLogType type, RegionId region, const std::string& payload,
                                  bool wait);
  // Connector thread: promotes the backup copies failover made this node primary of,
  // once the survivors' retained single-machine commit records are applied to them
  // (tx/retained_commits.h). False while some wait (a member did not answer).
  bool PromotePending();
  // Takes the complete backup copy of `r` over as primary (logged first), frozen until
  // every backup in `placement` received its copy.
  void PromoteCopyLocked(RegionId r, const membership::Placement& placement) ABSL_EXCLUSIVE_LOCKS_REQUIRED(copies_mu_);
  // This node is no longer `region`'s primary: freeze it, stop allocating in it, and
  // hand it to `to` (HandOverPending).
  void StartHandoverLocked(alloc::LocalRegion* region, NodeId to) ABSL_EXCLUSIVE_LOCKS_REQUIRED(copies_mu_);
  // Connector thread: sends each region being handed over to its new primary once its
  // locks drained, then retires it here. False while some remain.
  bool HandOverPending();
  // A region copy arrived whole (AllocService, any thread) / connector thread: promote
  // those that a handover gave this node.
  void OnCopyArrived(RegionId region);
  void PromoteArrived();
  // AllocService's copy gate (alloc_service.h), on messenger thread `thread`.
  void AdmitCopy(size_t thread, RegionId region, NodeId from, absl::AnyInvocable<void(absl::Status)> then);
  absl::Status CopyRegion(RegionId region, NodeId to);
  // Sends `region` (this node's, or a backup copy) whole to `to` (region_copy.h) and
  // waits for the outcome, however long the copy takes (it reads `region` until it ends,
  // and each of its requests has a deadline) — but for Stop: Cancelled then (connector
  // thread).
  absl::Status SendCopy(const Region& region, NodeId to);

  // --- Regions whose primary holds nothing (region_rescue.cc) ---
  // From PrepareFailover: each backup copy here whose source left in `next` (or whose
  // promotion here `next` overtook) while another member is its primary is to be
  // offered to that primary (RescuePending).
  void NoteRescuesLocked(const absl::flat_hash_set<NodeId>& departed, const membership::Placement& next)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(copies_mu_);
  // A grant lapses when the backup it went to is not in `config` as the same process, or
  // not in the region's replica set, or this node is not its primary any more (and after
  // kGrantLease without a copy arriving: AnswerHolder).
  void LapseGrants(const membership::Configuration& config, const membership::Placement& placement);
  // kRegionHolderMsgId, on a worker thread.
  void AnswerHolder(MsgThread& thread, const Message& message);
  // Connector thread: asks each noted region's primary whether it holds it, and hands
  // the copy here over when told to. False while some remain.
  bool RescuePending();
  absl::StatusOr<HolderReply> AskHolder(NodeId primary, const HolderQuery& query);
  // Whether `primary` answers that it holds `region` (connector thread).
  bool HoldsWhole(NodeId primary, RegionId region);
  // The retained commits applied to the copy of `region` here, no record touching it
  // left, then the copy sent to `to` as a handover.
  absl::Status HandCopyOver(RegionId region, NodeId to, uint64_t epoch);
  bool AnyThreadKeepsRecordsIn(RegionId region);

  const NodeOptions options_;
  const BackendChoice backend_choice_;
  const std::string backend_;
  const absl::Time started_;
  std::unique_ptr<NodeStorage> storage_;
  std::vector<tx::InDoubt> in_doubt_;  // from the log until AdoptRecoveredRegions
  bool recovered_regions_pending_ = false;  // connector thread after Start
  // Declared before the fabric: the allocator owns region memory registered with it.
  std::unique_ptr<alloc::EpochManager> epochs_;
  std::unique_ptr<alloc::BackupRegions> backups_;
  std::unique_ptr<AllocEnvironment> alloc_environment_;
  std::unique_ptr<alloc::Allocator> allocator_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<LoopThread>> loops_;
  std::unique_ptr<Messenger> messenger_;
  std::unique_ptr<alloc::AllocService> alloc_service_;
  std::unique_ptr<tx::TxService> tx_service_;
  struct AppHandler {
    MsgId id;
    MessageHandler handler;
    std::string registrant;
  };
  std::vector<AppHandler> app_handlers_;
  std::vector<ConfigurationListener> configuration_listeners_;  // fixed after Start
  std::unique_ptr<AdminServer> admin_;
  std::unique_ptr<membership::Membership> membership_;

  mutable Mutex metadata_mu_;
  absl::flat_hash_map<std::string, std::string> metadata_ ABSL_GUARDED_BY(metadata_mu_);

  mutable Mutex counters_mu_;
  std::map<std::string, CounterSource> service_counters_ ABSL_GUARDED_BY(counters_mu_);

  Mutex mu_;
  CondVar connect_cv_;
  std::shared_ptr<const membership::Configuration> latest_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const membership::Placement> placement_ ABSL_GUARDED_BY(mu_);
  // The configuration placement_ was made from (failover compares it with the next).
  std::shared_ptr<const membership::Configuration> placed_config_ ABSL_GUARDED_BY(mu_);
  // Regions of this node frozen until these backups hold a copy (failover.cc). Logged
  // (kRegionCopiesDue) whenever an entry is set, and restored by a restart.
  mutable Mutex copies_mu_;
  absl::flat_hash_map<RegionId, std::vector<NodeId>> pending_copies_ ABSL_GUARDED_BY(copies_mu_);
  // Backup copies this node became the primary of by failover, not promoted yet, and the
  // epoch that made it so (PromotePending).
  absl::flat_hash_map<RegionId, uint64_t> pending_promotions_ ABSL_GUARDED_BY(copies_mu_);
  // Regions of this node being handed over, to their new primary.
  absl::flat_hash_map<RegionId, NodeId> pending_handovers_ ABSL_GUARDED_BY(copies_mu_);
  // Backup copies here to offer to their region's primary (region_rescue.cc): the
  // primary and epoch that made it so; granted once the primary said to hand it over.
  struct Rescue {
    NodeId primary = kInvalidNode;
    uint64_t epoch = 0;
    bool granted = false;
    friend bool operator==(const Rescue&, const Rescue&) = default;
  };
  absl::flat_hash_map<RegionId, Rescue> rescues_ ABSL_GUARDED_BY(copies_mu_);
  // The newest placement epoch OnConfiguration began to apply: set before PrepareFailover,
  // so a promotion decided under copies_mu_ by an older placement_ knows it is stale.
  uint64_t configuring_epoch_ ABSL_GUARDED_BY(copies_mu_) = 0;
  // As the primary of a region it holds none of: the backup (and its incarnation) told
  // to hand its copy over. Taken on worker threads (never with copies_mu_).
  struct Grant {
    NodeId to = kInvalidNode;
    uint64_t incarnation = 0;
    absl::Time at;  // when granted, or when its copy was last seen arriving
  };
  Mutex grants_mu_;  // after copies_mu_ when both are held
  absl::flat_hash_map<RegionId, Grant> grants_ ABSL_GUARDED_BY(grants_mu_);
  // Regions whose backup copy here is being promoted (PromoteCopyLocked): between taking
  // the copy and adopting it this node holds neither, and must not grant a handover.
  absl::flat_hash_set<RegionId> promoting_ ABSL_GUARDED_BY(grants_mu_);

  // Moves on every change of placement_ (threads' PlacementCache compare it).
  std::atomic<uint64_t> placement_generation_{1};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<RegionId> arrived_ ABSL_GUARDED_BY(mu_);  // copies received whole (OnCopyArrived)
  std::thread connector_;
  // Leaving on a log failure: one thread, started at most once, never after Stop began
  // (which joins it before stopping membership itself).
  mutable Mutex fail_stop_mu_;
  bool fail_stop_closed_ ABSL_GUARDED_BY(fail_stop_mu_) = false;
  absl::Status log_failure_ ABSL_GUARDED_BY(fail_stop_mu_);
  std::thread fail_stop_;
  // Set once Start has built everything: the admin thread reads only after it.
  std::atomic<bool> started_up_{false};
  std::atomic<bool> linked_{false};
  // linked_ as membership last asked it (ZkMembershipOptions::failover_active), just
  // before it delivered the configuration OnConfiguration handles: failover then runs
  // exactly when membership wrote the removal markers it owes first. Static membership
  // never asks (its one configuration has nothing to fail over).
  std::atomic<bool> failover_on_delivery_{false};
};

}  // namespace farm::node

#endif  // FARM_NODE_NODE_H_
