#include "farm/fabric/verbs/verbs_device.h"
#include "farm/node/node.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "farm/base/log.h"
#include "farm/storage/data_directory.h"
#include "farm/storage/node_log_types.h"
#include "membership/placement.h"
#include "membership/static_membership.h"
#include "membership/zk_membership.h"

namespace farm::node {
namespace {

bool IsLoopbackHost(absl::string_view host_port) {
  const size_t colon = host_port.rfind(':');
  const absl::string_view host = host_port.substr(0, colon);
  return absl::StartsWith(host, "127.") || host == "localhost" || host == "[::1]";
}

// Links that failed are retried while their member stays in the configuration: first
// after kFirstLinkRetry (peers of a starting cluster come up within milliseconds of
// each other), then after twice as long each time, up to kLinkRetry.
constexpr absl::Duration kFirstLinkRetry = absl::Milliseconds(10);
constexpr absl::Duration kLinkRetry = absl::Seconds(1);
constexpr absl::Duration kCopyRetry = absl::Milliseconds(50);

void Log(NodeId id, const std::string& line) { FARM_LOG(kInfo, "node %u: %s", id, line); }

// Link and first-region failures while a cluster starts are expected (peers come up in
// any order): they are logged at debug level until they have lasted this many
// retries (about 5 s), then as a warning once a minute.
constexpr int kQuietRetries = 11;
constexpr int kRetriesPerWarning = 60;

// Logs the n-th consecutive failure (from 0) of something retried as links are.
void LogRetry(int failures, const std::string& line) {
  const bool warn = failures >= kQuietRetries && (failures - kQuietRetries) % kRetriesPerWarning == 0;
  const LogLevel level = warn ? LogLevel::kWarning : LogLevel::kDebug;
  if (LogEnabled(level)) LogLine(level, line);
}

}  // namespace

std::string DefaultHostId() {
  char name[256] = {};
  ::gethostname(name, sizeof(name) - 1);
  struct stat ns {};
  const uint64_t netns = ::stat("/proc/self/ns/net", &ns) == 0 ? ns.st_ino : 0;
  return absl::StrCat(name, "/netns:", netns);
}

BackendChoice ResolveBackend(const NodeOptions& o, absl::Span<const std::string> rdma_devices) {
  if (o.fabric != "auto") return {o.fabric, "forced by --fabric"};
  if (!o.static_members.empty()) {
    // A static list names each member's locator: its scheme decides.
    bool all_shm = true, all_verbs = true;
    for (absl::string_view entry : absl::StrSplit(o.static_members, ',', absl::SkipWhitespace())) {
      all_shm = all_shm && absl::StrContains(entry, "=shm:");
      all_verbs = all_verbs && absl::StrContains(entry, "=verbs:");
    }
    if (all_verbs) return {"verbs", "every static member has a verbs locator"};
    if (all_shm) return {"shm", "every static member has an shm locator"};
    return {"tcp", "static members are not all shm or verbs"};
  }
  if (!rdma_devices.empty()) {
    return {"verbs", absl::StrCat("RDMA device ", rdma_devices.front(), " has an active port")};
  }
  for (absl::string_view host : absl::StrSplit(o.zookeeper, ',')) {
    if (!IsLoopbackHost(host)) return {"tcp", "no RDMA device; members on other hosts"};
  }
  return {"shm", "no RDMA device; every member on this host"};
}

absl::StatusOr<NodeOptions> ResolveNodeOptions(NodeOptions o) {
  if (o.node_id == 0 || o.node_id > membership::kMaxNodeId) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--node_id must be in [1, %d]", membership::kMaxNodeId));
  }
  if (o.zookeeper.empty() == o.static_members.empty()) {
    return absl::InvalidArgumentError(
        "give exactly one of --zookeeper (a cluster) or --members (a static member list)");
  }
  if (o.fabric != "auto" && o.fabric != "shm" && o.fabric != "tcp" && o.fabric != "verbs") {
    return absl::InvalidArgumentError(
        absl::StrCat("--fabric=", o.fabric, ": expected auto, shm, tcp or verbs"));
  }
  if (o.cluster_secret.size() < 16) {
    return absl::InvalidArgumentError("the cluster secret must be at least 16 bytes (--secret_file)");
  }
  if (absl::StartsWith(o.listen, "0.0.0.0:") || absl::StartsWith(o.listen, "[::]:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--listen=", o.listen, ": give an address peers can reach, not a wildcard"));
  }
  if (o.threads == 0 || o.threads > 64) return absl::InvalidArgumentError("--threads must be in [1, 64]");
  if (o.region_bytes < alloc::kMinRegionBytes || o.region_bytes > (4ull << 30) ||
      o.region_bytes % alloc::kBlockUnitBytes != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--region_mb must be in [%d, 4096]", alloc::kMinRegionBytes >> 20));
  }
  if (o.data_dir.empty()) o.data_dir = absl::StrCat("farm-data/node-", o.node_id);
  if (o.log_sync != "off") {
    if (absl::StatusOr<storage::SyncPolicy> p = storage::SyncPolicy::Parse(o.log_sync); !p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(p.status().message(), ", or off"));
    }
  }
  if (o.host_id.empty()) o.host_id = DefaultHostId();
  if (o.compute_only) {
    o.capacity_bytes = 0;  // no regions
  } else if (o.capacity_bytes == 0) {
    o.capacity_bytes = o.region_bytes;
  }
  if (!o.compute_only && o.capacity_bytes < o.region_bytes) {
    return absl::InvalidArgumentError("--capacity_mb must be at least one region (--region_mb)");
  }
  return o;
}

absl::StatusOr<std::unique_ptr<Node>> Node::Create(const NodeOptions& options) {
  absl::StatusOr<NodeOptions> resolved = ResolveNodeOptions(options);
  if (!resolved.ok()) return resolved.status();
  // The data directory is this node's of this cluster, or new; its log parses.
  NodeStorageOptions so;
  so.path = resolved->data_dir;
  so.cluster = resolved->cluster;
  so.node_id = resolved->node_id;
  so.log_sync = resolved->log_sync;
  so.checkpoint_bytes = resolved->checkpoint_bytes;
  so.file_system = resolved->file_system;
  absl::StatusOr<std::unique_ptr<NodeStorage>> storage = NodeStorage::Open(so);
  if (!storage.ok()) return storage.status();
  return std::unique_ptr<Node>(new Node(*resolved, std::move(*storage)));
}

Node::Node(const NodeOptions& options, std::unique_ptr<NodeStorage> storage)
    : options_(options),
      backend_choice_(ResolveBackend(options, options.fabric == "auto" ? ActiveRdmaDevices()
                                                                       : std::vector<std::string>{})),
      backend_(backend_choice_.backend),
      started_(absl::Now()),
      storage_(std::move(storage)) {}

Node::~Node() { Stop(); }

absl::Status Node::RegisterHandler(MsgId id, MessageHandler handler, absl::string_view registrant) {
  if (messenger_ != nullptr) return absl::FailedPreconditionError("handlers are registered before Start");
  if (id < kFirstApplicationMsgId || id >= kFirstReservedMsgId) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "message id 0x%x is not an application's (0x%x to 0x%x)", id, kFirstApplicationMsgId,
        kFirstReservedMsgId - 1));
  }
  for (const AppHandler& known : app_handlers_) {
    if (known.id == id) return DuplicateHandlerError(id, known.registrant, registrant);
  }
  app_handlers_.push_back(AppHandler{id, std::move(handler), std::string(registrant)});
  return absl::OkStatus();
}

void Node::SetPlacementLocked(std::shared_ptr<const membership::Placement> placement) {
  placement_ = std::move(placement);
  placement_generation_.fetch_add(1, std::memory_order_release);
}

absl::Status Node::AddConfigurationListener(ConfigurationListener listener) {
  if (messenger_ != nullptr) return absl::FailedPreconditionError("configuration listeners are added before Start");
  configuration_listeners_.push_back(std::move(listener));
  return absl::OkStatus();
}

absl::Status Node::Start() {
  Log(options_.node_id, absl::StrCat("fabric backend ", backend_, " (", backend_choice_.reason, ")"));
  FabricOptions fo;
  fo.backend = backend_;
  fo.cluster_secret = options_.cluster_secret;
  fo.device = options_.rdma_device;
  fo.listen_address = backend_ == "shm"
                          ? std::filesystem::absolute(options_.data_dir + "/fabric.sock").string()
                          : options_.listen;
  if (absl::Status s = CreateAllocator(); !s.ok()) return s;
  absl::StatusOr<tx::ReplayResult> replay = storage_->Start(options_.node_id, backups_.get());
  if (!replay.ok()) return replay.status();
  in_doubt_ = std::move(replay->in_doubt);
  const std::vector<RegionId> partial_copies = std::move(replay->partial_copies);
  {
    // Copies a re-replication still owed when the node stopped: the regions stay frozen
    // (AdoptRecoveredRegions) until ReplicatePending has sent them.
    MutexLock lock(&copies_mu_);
    for (auto& [r, nodes] : replay->copies_due) {
      Log(options_.node_id, absl::StrFormat("region %d: copies due to node(s) %s since before the restart; it "
                                            "serves once they are sent",
                                            r, absl::StrJoin(nodes, ",")));
      pending_copies_[r] = std::move(nodes);
    }
  }
  {
    MutexLock lock(&metadata_mu_);
    metadata_ = std::move(replay->metadata);
  }
  for (RegionId r : backups_->Held()) recovered_regions_pending_ |= backups_->CreatorOf(r) == options_.node_id;
  absl::StatusOr<std::unique_ptr<Fabric>> fabric = Fabric::Create(fo);
  if (!fabric.ok()) return fabric.status();
  fabric_ = std::move(*fabric);

  std::vector<EventLoop*> loops;
  EventLoopOptions lo;
  lo.spin = options_.spin;
  for (uint32_t t = 0; t < options_.threads; ++t) {
    absl::StatusOr<std::unique_ptr<Doorbell>> bell = fabric_->CreateDoorbell();
    if (!bell.ok()) return bell.status();
    absl::StatusOr<std::unique_ptr<EventLoop>> loop = EventLoop::Create(std::move(*bell), lo);
    if (!loop.ok()) return loop.status();
    loops_.push_back(std::make_unique<LoopThread>(std::move(*loop)));
    loops.push_back(&loops_.back()->loop());
  }
  MessengerOptions mo;
  mo.node_id = options_.node_id;
  absl::StatusOr<std::unique_ptr<Messenger>> messenger = Messenger::Create(fabric_.get(), loops, mo);
  if (!messenger.ok()) return messenger.status();
  messenger_ = std::move(*messenger);
  absl::StatusOr<std::unique_ptr<alloc::AllocService>> service =
      alloc::AllocService::Create(messenger_.get(), allocator_.get(), backups_.get(), storage_->log());
  if (!service.ok()) return service.status();
  alloc_service_ = std::move(*service);
  for (RegionId r : partial_copies) {
    alloc_service_->MarkCopyPartial(r);
    Log(options_.node_id, absl::StrFormat("region %d: the copy here is partial (it was arriving when the node "
                                          "stopped): it is not promoted unless a copy of the region arrives whole",
                                          r));
  }
  alloc_service_->set_copy_gate([this](size_t thread, RegionId region, NodeId from, auto then) {
    AdmitCopy(thread, region, from, std::move(then));
  });
  alloc_service_->set_on_copy_complete([this](RegionId region) { OnCopyArrived(region); });
  tx::TxRecovery recovery;
  recovery.boot = replay->boot;
  recovery.outcomes = std::move(replay->outcomes);
  recovery.retained = std::move(replay->retained);
  absl::StatusOr<std::unique_ptr<tx::TxService>> tx =
      tx::TxService::Create(options_.node_id, messenger_.get(), fabric_.get(), allocator_.get(),
                            alloc_service_.get(), options_.tx, std::move(recovery));
  if (!tx.ok()) return tx.status();
  tx_service_ = std::move(*tx);
  if (absl::Status s = messenger_->RegisterHandler(
          kRegionHolderMsgId, [this](MsgThread& t, const Message& m) { AnswerHolder(t, m); }, "node");
      !s.ok()) {
    return s;
  }
  for (AppHandler& h : app_handlers_) {
    if (absl::Status s = messenger_->RegisterHandler(h.id, std::move(h.handler), h.registrant); !s.ok()) return s;
  }
  app_handlers_.clear();
  if (absl::Status s = messenger_->Start(); !s.ok()) return s;

  absl::StatusOr<std::unique_ptr<AdminServer>> admin = AdminServer::Start(
      options_.admin_listen, [this](const AdminRequest& request) {
        AdminResponse response;
        if (request.command() == AdminRequest::STATS) {
          *response.mutable_stats() = Stats();
        } else {
          response.set_error(absl::StrCat("unknown admin command ", request.command()));
        }
        return response;
      });
  if (!admin.ok()) return admin.status();
  admin_ = std::move(*admin);

  connector_ = std::thread([this] { ConnectLoop(); });
  if (absl::Status s = CreateMembership(); !s.ok()) return s;
  for (size_t t = 0; t < loops_.size(); ++t) {
    RunInLoop(loops_[t]->loop(), [this, t] { tx_service_->context(t)->SetGate(&membership_->gate()); });
  }
  if (absl::Status s = membership_->Start([this](auto config) { OnConfiguration(config); });
      !s.ok()) {
    return s;
  }
  // From here a log failure takes the node out (a failure before it fails Start, or is
  // heard at once here).
  storage_->OnLogFailure([this](const absl::Status& failure) { LeaveOnLogFailure(failure); });
  started_up_.store(true, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status Node::CreateMembership() {
  membership::Member self;
  self.id = options_.node_id;
  self.host = options_.host_id;
  self.fabric_addresses[backend_] = fabric_->locator();
  self.admin_address = admin_->address();
  self.capacity_bytes = options_.capacity_bytes;
  self.compute_only = options_.compute_only;
  self.threads = options_.threads;
  self.incarnation = absl::Uniform<uint64_t>(absl::BitGen());
  if (!options_.zookeeper.empty()) {
    membership::ZkMembershipOptions zo;
    zo.zookeeper = options_.zookeeper;
    zo.cluster = options_.cluster;
    zo.self = self;
    zo.replication = options_.replication;
    zo.virtual_rings = options_.virtual_rings;
    zo.session_timeout = options_.session_timeout;
    zo.connect_timeout = options_.connect_timeout;
    zo.join_timeout = options_.join_timeout;
    // A member that holds data never rejoins on its own after its session expired: the
    // cluster moved its regions on meanwhile (failover), so its copies are stale.
    zo.rejoin_after_expiry = options_.compute_only;
    // Started on regions of an earlier run: refused if the cluster removed this node.
    zo.holds_data = !backups_->Held().empty();
    // The same answer as failover's (OnConfiguration): data moves on only then.
    zo.failover_active = [this] {
      const bool active = linked_.load(std::memory_order_acquire);
      failover_on_delivery_.store(active, std::memory_order_release);
      return active;
    };
    absl::StatusOr<std::unique_ptr<membership::ZkMembership>> zk = membership::ZkMembership::Create(zo);
    if (!zk.ok()) return zk.status();
    membership_ = std::move(*zk);
    return absl::OkStatus();
  }
  absl::StatusOr<std::vector<membership::Member>> members =
      membership::ParseMemberList(options_.static_members);
  if (!members.ok()) return members.status();
  for (const membership::Member& m : *members) {
    if (m.id == options_.node_id && m.compute_only != options_.compute_only) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "node %d: the member list %s it compute-only, its options %s", m.id,
          m.compute_only ? "marks" : "does not mark", options_.compute_only ? "do" : "do not"));
    }
  }
  membership::Configuration config;
  config.cluster = options_.cluster;
  config.epoch = 1;
  config.manager = members->front().id;
  config.replication = options_.replication;
  config.virtual_rings = options_.virtual_rings;
  config.members = std::move(*members);
  for (membership::Member& m : config.members) {
    if (m.id == self.id) m = self;  // our own entry with everything we know
  }
  absl::StatusOr<std::unique_ptr<membership::StaticMembership>> fixed =
      membership::StaticMembership::Create(std::move(config), self.id);
  if (!fixed.ok()) return fixed.status();
  membership_ = std::move(*fixed);
  return absl::OkStatus();
}

// The allocator's view of the node: the placement of the newest configuration and the
// fabric that regions are registered with.
class Node::AllocEnvironment final : public alloc::AllocatorEnvironment {
 public:
  explicit AllocEnvironment(Node* node) : node_(node) {}
  // The newest configuration's placement: the membership's current one may be newer
  // than the last OnConfiguration (Start returns once it lists this node).
  std::shared_ptr<const membership::Placement> placement() const override {
    // Later placements come only through OnConfiguration: failover prepares the node for
    // one before any thread may use it.
    std::shared_ptr<const membership::Configuration> config = node_->membership_->current();
    MutexLock lock(&node_->mu_);
    if (config != nullptr && node_->placement_ == nullptr) {
      absl::StatusOr<membership::Placement> p = membership::Placement::Create(*config);
      if (p.ok()) {
        node_->SetPlacementLocked(std::make_shared<const membership::Placement>(std::move(*p)));
        node_->placed_config_ = config;
      }
    }
    return node_->placement_;
  }
  uint64_t placement_generation() const override {
    return node_->placement_generation_.load(std::memory_order_acquire);
  }
  absl::StatusOr<RegionCapability> RegisterRegion(const Region& region) override {
    absl::StatusOr<RegisteredRegion> registered = node_->fabric_->RegisterRegion(region);
    if (!registered.ok()) return registered.status();
    Log(node_->options_.node_id,
        absl::StrFormat("region %d (%d MB) registered, this node primary (new, or taken back from the log)",
                        region.id(), region.size() >> 20));
    return registered->capability;
  }
  absl::Status DeregisterRegion(RegionId region) override {
    return node_->fabric_->DeregisterRegion(region);
  }

 private:
  Node* const node_;
};

absl::Status Node::CreateAllocator() {
  epochs_ = std::make_unique<alloc::EpochManager>();
  backups_ = std::make_unique<alloc::BackupRegions>();
  alloc_environment_ = std::make_unique<AllocEnvironment>(this);
  alloc::AllocatorOptions ao;
  ao.self = options_.node_id;
  ao.region_bytes = options_.region_bytes;
  ao.capacity_bytes = options_.capacity_bytes;
  absl::StatusOr<std::unique_ptr<alloc::Allocator>> allocator =
      alloc::Allocator::Create(ao, alloc_environment_.get(), epochs_.get());
  if (!allocator.ok()) return allocator.status();
  allocator_ = std::move(*allocator);
  return absl::OkStatus();
}

void Node::OnConfiguration(std::shared_ptr<const membership::Configuration> config) {
  const bool serving = membership_->gate().serving();
  Log(options_.node_id, absl::StrCat(serving ? "serving in epoch " : "not serving in epoch ",
                                     config->epoch, " (", config->Summary(), ")"));
  absl::StatusOr<membership::Placement> placement = membership::Placement::Create(*config);
  if (!placement.ok()) Log(options_.node_id, absl::StrCat("no placement: ", placement.status().ToString()));
  std::shared_ptr<const membership::Placement> next;
  if (placement.ok()) next = std::make_shared<const membership::Placement>(std::move(*placement));
  std::shared_ptr<const membership::Placement> previous;
  std::shared_ptr<const membership::Configuration> previous_config;
  {
    MutexLock lock(&mu_);
    previous = placement_;
    previous_config = placed_config_;
  }
  bool recover = false;
  if (next != nullptr) {
    MutexLock lock(&copies_mu_);
    configuring_epoch_ = std::max(configuring_epoch_, next->epoch());
  }
  if (next != nullptr && (previous == nullptr || previous->epoch() < next->epoch())) {
    // Not while the node starts: a cluster restarted from its data directories is
    // whole again only once min_members are back, and a member missing until then has
    // not failed — it comes back with its data (failover would promote its regions
    // elsewhere, and two copies would serve).
    // Decided as membership saw it before delivery: the removal markers it wrote (or
    // did not) match what this node does (zk_membership.h).
    if (previous != nullptr && previous_config != nullptr && failover_on_delivery_.load(std::memory_order_acquire)) {
      recover = PrepareFailover(*previous_config, *config, *previous, *next);
    }
    tx_service_->Fenced(next->epoch());
  }
  if (next != nullptr) LapseGrants(*config, *next);
  {
    MutexLock lock(&mu_);
    if (next != nullptr && (placement_ == nullptr || placement_->epoch() < next->epoch())) {
      SetPlacementLocked(next);
      placed_config_ = config;
    }
    latest_ = std::move(config);
    connect_cv_.SignalAll();
  }
  if (recover) {
    for (size_t t = 0; t < loops_.size(); ++t) {
      loops_[t]->loop().Post([this, t] { tx_service_->ResolveRecovering(t); });
    }
  }
}

void Node::ConnectLoop() {
  std::shared_ptr<const membership::Configuration> attempted;  // last config tried in full
  bool all_linked = true;
  absl::flat_hash_map<NodeId, int> link_failures;  // consecutive, per peer
  int region_failures = 0;
  int adopt_failures = 0;
  uint64_t announced_epoch = 0;  // the last configuration the listeners heard
  uint64_t waited_epoch = 0;     // the last configuration too small for a first region
  bool copies_done = true;       // no region waits for a copy to a backup
  absl::Duration link_retry = kFirstLinkRetry;  // the wait after a pass that left links missing
  for (;;) {
    std::shared_ptr<const membership::Configuration> config;
    {
      MutexLock lock(&mu_);
      // Wake for a new configuration; after a pass that left links missing, also
      // after link_retry, to try them again; soon, while region copies are due.
      const absl::Duration wait = !copies_done ? kCopyRetry : all_linked ? absl::Hours(1) : link_retry;
      link_retry = all_linked ? kFirstLinkRetry : std::min(2 * link_retry, kLinkRetry);
      connect_cv_.WaitFor(&mu_, wait,
                          [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                            return stopping_ || latest_ != attempted || !arrived_.empty();
                          });
      if (stopping_) return;
      config = latest_;
    }
    PromoteArrived();
    if (config == nullptr) continue;  // timed out before the first configuration
    attempted = config;
    all_linked = true;
    for (const membership::Member& m : config->members) {
      if (m.id == options_.node_id || messenger_->IsConnected(m.id)) continue;
      {
        MutexLock lock(&mu_);
        if (stopping_) return;
      }
      const std::string locator = m.address(backend_);
      if (locator.empty()) {
        Log(options_.node_id, absl::StrFormat(
            "cannot link to node %d: it has no %s address (a cluster uses one fabric "
            "backend until per-peer selection)", m.id, backend_));
        continue;
      }
      if (absl::Status s = messenger_->Connect(m.id, locator); !s.ok()) {
        const int failures = link_failures[m.id]++;
        LogRetry(failures, absl::StrFormat("node %u: link to node %d failed %d times (retrying): %s",
                                           options_.node_id, m.id, failures + 1, s.ToString()));
        all_linked = false;
      } else {
        link_failures.erase(m.id);
      }
    }
    if (recovered_regions_pending_) {
      if (absl::Status s = AdoptRecoveredRegions(); !s.ok()) {
        LogRetry(adopt_failures++, absl::StrFormat("node %u: cannot take back its regions yet (retrying): %s",
                                                   options_.node_id, s.ToString()));
        all_linked = false;  // tried again after link_retry, or with the next configuration
        continue;
      }
      recovered_regions_pending_ = false;
    }
    const bool promoted = PromotePending();
    const bool rescued = RescuePending();
    copies_done = ReplicatePending() && promoted && rescued;
    // Once its backups can be reached, the node has a region ready for the first
    // allocations (and for the admin's placement view); retried like a link.
    // The first region waits for min_members data-holding members (NodeOptions); later
    // configurations, smaller or not, go on as usual.
    const auto holding = std::count_if(config->members.begin(), config->members.end(),
                                       [](const membership::Member& m) { return !m.compute_only; });
    // A restarted node (its regions back from its log) waits the same way before it
    // is first ready: services decide cluster-wide things at start (kv's shard map is
    // built from every member's directory) and must see the whole cluster.
    if (!options_.compute_only && !linked_.load(std::memory_order_acquire) &&
        holding < static_cast<std::ptrdiff_t>(options_.min_members)) {
      if (config->epoch != waited_epoch) {
        waited_epoch = config->epoch;
        Log(options_.node_id, absl::StrFormat("waiting for %d members that hold data before %s (epoch %d has %d)",
                                              options_.min_members,
                                              allocator_->blocks().Regions().empty() ? "creating a region"
                                                                                     : "serving its regions",
                                              config->epoch, holding));
      }
      continue;  // woken by the next configuration
    }
    if (all_linked && !options_.compute_only && allocator_->blocks().Regions().empty()) {
      if (absl::Status s = CreateFirstRegion(); !s.ok()) {
        const int failures = region_failures++;
        LogRetry(failures, absl::StrFormat("node %u: first region not created after %d tries (retrying): %s",
                                           options_.node_id, failures + 1, s.ToString()));
        all_linked = false;
      } else {
        region_failures = 0;
      }
    }
    if (all_linked && (options_.compute_only || !allocator_->blocks().Regions().empty())) {
      if (!linked_.exchange(true, std::memory_order_acq_rel)) {
        Log(options_.node_id, absl::StrFormat("linked to every member of epoch %d: failover is active", config->epoch));
      }
      // Services hear configurations this node is in, the latest it linked to.
      if (config->epoch > announced_epoch && config->Contains(options_.node_id)) {
        announced_epoch = config->epoch;
        std::vector<NodeId> members;
        for (const membership::Member& m : config->members) members.push_back(m.id);
        std::sort(members.begin(), members.end());
        for (const ConfigurationListener& listener : configuration_listeners_) listener(config->epoch, members);
      }
    }
  }
}

absl::Status Node::CreateFirstRegion() {
  auto result = std::make_shared<absl::Status>(absl::UnknownError("unset"));
  auto done = std::make_shared<Notification>();
  loops_[0]->loop().Post([this, result, done] {
    alloc::ThreadAllocator* allocator = alloc_service_->thread(0);
    if (allocator == nullptr) {
      *result = absl::CancelledError("stopping");
      done->Notify();
      return;
    }
    allocator->CreateRegionNow([result, done](const absl::Status& s) {
      *result = s;
      done->Notify();
    });
  });
  if (!done->WaitForNotificationWithTimeout(options_.connect_timeout)) {
    return absl::DeadlineExceededError("the region's backups did not answer in time");
  }
  return *result;
}

absl::Status Node::AdoptRecoveredRegions() {
  // A region goes from the copies to the allocator only once a configuration can place
  // it: the first one a restarted node applies may have no member that holds data (a
  // compute-only manager outlived every node and published one), and an adoption that
  // failed then dropped the region it had taken, with everything the log gave back.
  std::shared_ptr<const membership::Placement> placement = alloc_environment_->placement();
  if (placement == nullptr) return absl::UnavailableError("no configuration to place its regions in yet");
  if (absl::Status s = ReconcileRecoveredRegions(*placement); !s.ok()) return s;
  for (RegionId id : backups_->Held()) {
    if (backups_->CreatorOf(id) != options_.node_id) continue;
    std::unique_ptr<Region> region = backups_->Take(id);
    absl::StatusOr<RegionCapability> capability = alloc_environment_->RegisterRegion(*region);
    if (!capability.ok()) return capability.status();
    if (absl::Status s = allocator_->AdoptRegion(std::move(region), *capability); !s.ok()) return s;
    MutexLock lock(&copies_mu_);
    if (pending_copies_.contains(id)) allocator_->blocks().FindRegion(id)->set_frozen(true);
  }
  // Thread 0 settles what the crash left in doubt; the objects stay locked until then.
  std::vector<tx::InDoubt> in_doubt = std::move(in_doubt_);
  loops_[0]->loop().Post([this, in_doubt = std::move(in_doubt)]() mutable {
    tx_service_->ResolveInDoubt(std::move(in_doubt), [this](const absl::Status& s) {
      if (!s.ok()) Log(options_.node_id, absl::StrCat("in-doubt transactions not settled: ", s.ToString()));
    });
  });
  return absl::OkStatus();
}

void Node::Stop() {
  {
    MutexLock lock(&fail_stop_mu_);
    fail_stop_closed_ = true;
  }
  if (fail_stop_.joinable()) fail_stop_.join();  // not started after the line above
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    connect_cv_.SignalAll();
  }
  started_up_.store(false, std::memory_order_release);
  if (membership_ != nullptr) membership_->Stop();
  if (connector_.joinable()) connector_.join();
  admin_.reset();
  if (alloc_service_ != nullptr) {
    // Each thread's transaction context, then its allocator, go on its own thread,
    // before the messenger they answer through (pending requests are answered
    // Cancelled).
    for (size_t t = 0; t < loops_.size(); ++t) {
      RunInLoop(loops_[t]->loop(), [this, t] {
        if (tx_service_ != nullptr) tx_service_->StopThread(t);
        alloc_service_->StopThread(t);
      });
    }
  }
  // Its last completions post to the loops: before they go.
  if (storage_ != nullptr) storage_->Close();
  messenger_.reset();  // while the loops run (messenger.h)
  loops_.clear();
  tx_service_.reset();
  alloc_service_.reset();
}

std::optional<std::string> Node::Metadata(const std::string& name) const {
  MutexLock lock(&metadata_mu_);
  auto it = metadata_.find(name);
  if (it == metadata_.end()) return std::nullopt;
  return it->second;
}

void Node::PutMetadata(const std::string& name, std::string value, absl::AnyInvocable<void(absl::Status)> done) {
  if (value.size() > tx::kMaxMetadataBytes || name.size() > 0xFFFF) {
    return done(absl::InvalidArgumentError(absl::StrFormat(
        "metadata %s: %d bytes (at most %d)", name, value.size(), tx::kMaxMetadataBytes)));
  }
  auto keep = [this, name, value, done = std::move(done)](absl::Status s) mutable {
    if (s.ok()) {
      MutexLock lock(&metadata_mu_);
      metadata_[name] = std::move(value);
    }
    done(std::move(s));
  };
  storage::RecordLog* log = storage_->log();
  if (log == nullptr) return keep(absl::OkStatus());
  log->Append(storage::TypeByte(storage::NodeLogType::kMetadata), tx::EncodeMetadata(name, value), std::move(keep));
}

}  // namespace farm::node
