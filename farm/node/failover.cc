// Node's side of failover (node.h): fence, promote, freeze, re-replicate.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "alloc/durable_records.h"
#include "alloc/region_copy.h"
#include "farm/base/log.h"
#include "farm/node/node.h"

namespace farm::node {
namespace {

// A copy still going after this is reported (and waited for: it reads the region until
// its `done`, and each of its requests has its own deadline).
constexpr absl::Duration kSlowCopy = absl::Minutes(10);
// How often a wait for a copy looks whether the node is stopping.
constexpr absl::Duration kStopCheck = absl::Seconds(1);
// How long a member has to answer for its retained commit records at a promotion.
constexpr absl::Duration kGatherTimeout = absl::Seconds(2);

void Log(NodeId id, const std::string& line) { FARM_LOG(kInfo, "node %u: %s", id, line); }

std::vector<NodeId> Union(std::vector<NodeId> a, std::span<const NodeId> b) {
  for (NodeId n : b) {
    if (std::find(a.begin(), a.end(), n) == a.end()) a.push_back(n);
  }
  return a;
}

}  // namespace

bool Node::PrepareFailover(const membership::Configuration& previous_config, const membership::Configuration& config,
                           const membership::Placement& previous, const membership::Placement& next) {
  const NodeId self = options_.node_id;
  // A member that left, or came back as another process (its data is not the old one's).
  absl::flat_hash_set<NodeId> departed;
  for (const membership::Member& m : previous_config.members) {
    const membership::Member* now = config.Find(m.id);
    if (now == nullptr || now->incarnation != m.incarnation) departed.insert(m.id);
  }
  // Copies this node may have to hand to a primary that holds none: never dropped.
  absl::flat_hash_set<RegionId> rescuing;
  {
    MutexLock lock(&copies_mu_);
    for (const auto& entry : rescues_) rescuing.insert(entry.first);
  }
  tx::FailoverFence fence;
  fence.epoch = next.epoch();
  fence.departed = departed;
  for (RegionId r : backups_->Held()) {
    absl::StatusOr<membership::ReplicaSet> rs = next.Lookup(r);
    if (!rs.ok()) continue;
    absl::StatusOr<membership::ReplicaSet> before = previous.Lookup(r);
    // The new primary held the region before (so this copy is not the last one left).
    const bool held_elsewhere = before.ok() && before->Contains(rs->primary()) && !departed.contains(rs->primary());
    if (rs->primary() == self) {
      fence.promoting.insert(r);
    } else if (!rs->Contains(self) && held_elsewhere && !rescuing.contains(r) && backups_->Drop(r)) {
      // Out of its replica set: the copy stops receiving commits, so it must never be
      // promoted later (a backup that rejoins a set receives a copy anew).
      (void)LogRegionRecord(storage::NodeLogType::kRegionDropped, r, 0, /*wait=*/false);
      Log(self, absl::StrFormat("region %d: no longer a replica in epoch %d; its copy here dropped", r, next.epoch()));
    }
  }
  // Calls to a member that left fail now, not at their deadlines: a coordinator waiting
  // on it aborts (or reports the outcome unknown) at once.
  for (NodeId gone : departed) {
    messenger_->DropPeer(gone, absl::UnavailableError(absl::StrFormat("node %d left the configuration", gone)));
  }
  if (!departed.empty()) {
    Log(self, absl::StrFormat("epoch %d: node(s) %s left; fencing epoch %d, promoting %d backup copies",
                              next.epoch(), absl::StrJoin(departed, ","), next.epoch(), fence.promoting.size()));
    for (size_t t = 0; t < loops_.size(); ++t) {
      absl::Status fenced;
      RunInLoop(loops_[t]->loop(), [&] {
        if (tx::ThreadContext* ctx = tx_service_->context(t)) fenced = ctx->FenceForFailover(fence);
      });
      if (!fenced.ok()) Log(self, absl::StrCat("thread ", t, " could not fence: ", fenced.ToString()));
    }
  }
  MutexLock lock(&copies_mu_);
  // Promoted once the survivors' retained commit records are in (PromotePending).
  for (RegionId r : fence.promoting) pending_promotions_[r] = next.epoch();
  // Copies whose source left while a member that may hold none is primary.
  NoteRescuesLocked(departed, next);
  // This node's other regions.
  for (alloc::LocalRegion* region : allocator_->blocks().Regions()) {
    const RegionId r = region->id();
    if (fence.promoting.contains(r)) continue;
    absl::StatusOr<membership::ReplicaSet> now = next.Lookup(r);
    absl::StatusOr<membership::ReplicaSet> before = previous.Lookup(r);
    if (!now.ok()) continue;
    if (now->primary() != self) {
      // A member joined before this node on the region's ring: it is the primary now and
      // gets the region from here once the locks taken before drain (ReplicatePending).
      StartHandoverLocked(region, now->primary());
      continue;
    }
    if (auto h = pending_handovers_.find(r); h != pending_handovers_.end()) {
      // The member it was going to did not stay: this node keeps the region.
      pending_handovers_.erase(h);
      region->set_leaving(false);
      Log(self, absl::StrFormat("region %d: its handover is off (this node is its primary again)", r));
    }
    // Backups that joined the replica set need a copy.
    std::vector<NodeId> due;
    auto pending = pending_copies_.find(r);
    if (pending != pending_copies_.end()) due = pending->second;
    for (NodeId b : now->backups()) {
      const bool had = before.ok() && before->Contains(b) && !departed.contains(b);
      if (!had) due = Union(std::move(due), std::span<const NodeId>(&b, 1));
    }
    std::erase_if(due, [&](NodeId b) { return !now->Contains(b); });
    if (due.empty()) {
      if (pending != pending_copies_.end()) {
        pending_copies_.erase(pending);
        (void)LogCopiesDue(r, {}, /*wait=*/false);  // if lost, a restart sends the copies again
      }
      region->set_frozen(false);
      continue;
    }
    region->set_frozen(true);
    if (pending == pending_copies_.end() || pending->second != due) {
      // Durable, so that a restart (of the whole cluster) resumes them: until they are
      // sent the backups' copies may lack commits or hold none.
      if (absl::Status s = LogCopiesDue(r, due, /*wait=*/true); !s.ok()) {
        Log(self, absl::StrFormat("region %d: its due copies not logged (a restart would not resume them): %s", r,
                                  s.ToString()));
      }
    }
    pending_copies_[r] = std::move(due);
  }
  return !departed.empty();
}

bool Node::PromotePending() {
  std::shared_ptr<const membership::Placement> placement;
  {
    MutexLock lock(&mu_);
    placement = placement_;
  }
  absl::flat_hash_map<RegionId, uint64_t> pending;
  {
    MutexLock lock(&copies_mu_);
    pending = pending_promotions_;
  }
  if (pending.empty() || placement == nullptr) return pending.empty();
  std::vector<RegionId> regions;
  uint64_t epoch = 0;
  for (const auto& [r, e] : pending) {
    regions.push_back(r);
    epoch = std::max(epoch, e);
  }
  std::sort(regions.begin(), regions.end());
  // A single-machine commit of the dead primary may have reached some survivors and not
  // others (tx/retained_commits.h): every member that holds regions is asked for the
  // records it retains with an entry in these, and the copies here take what they lack,
  // before the regions serve.
  std::vector<NodeId> ask;
  for (NodeId n : placement->members()) {
    if (n != options_.node_id) ask.push_back(n);
  }
  const std::string what = absl::StrFormat("region(s) %s", absl::StrJoin(regions, ","));
  absl::StatusOr<std::vector<tx::LogRecord>> records =
      tx_service_->CollectRetained(ask, epoch, regions, kGatherTimeout);
  absl::StatusOr<size_t> applied = records.ok()
                                       ? tx_service_->ApplyRetained(*records, regions, kGatherTimeout)
                                       : absl::StatusOr<size_t>(records.status());
  if (!applied.ok()) {
    Log(options_.node_id, absl::StrFormat("%s: not promoted yet, the survivors' commit records are not all in "
                                          "(trying again): %s",
                                          what, applied.status().ToString()));
    return false;
  }
  Log(options_.node_id, absl::StrFormat("%s: %d retained commit records from %d members, %d entries applied here",
                                        what, records->size(), ask.size(), *applied));
  {
    MutexLock lock(&mu_);
    placement = placement_;
  }
  MutexLock lock(&copies_mu_);
  // A newer configuration is being applied: promote by its placement, on the next try.
  if (placement == nullptr || placement->epoch() < configuring_epoch_) return false;
  for (const auto& [r, e] : pending) {
    auto it = pending_promotions_.find(r);
    // A newer configuration promoted it again meanwhile: gathered again, from its members.
    if (it == pending_promotions_.end() || it->second != e) continue;
    pending_promotions_.erase(it);
    absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(r);
    if (rs.ok() && rs->primary() == options_.node_id) PromoteCopyLocked(r, *placement);
  }
  return pending_promotions_.empty();
}

void Node::PromoteCopyLocked(RegionId r, const membership::Placement& placement) {
  const NodeId self = options_.node_id;
  const Region* copy = backups_->Find(r);
  if (copy == nullptr) return;
  if (!alloc_service_->copies_in_progress().Complete(r)) {
    // Its sender failed half-way: the bytes are not the region's. Better unavailable than
    // wrong; an operator restores it (the region's data is lost if no replica holds it).
    Log(self, absl::StrFormat("region %d: this node is its primary now, but its copy here is not whole (still "
                              "arriving, or its sender failed half-way): not promoted yet",
                              r));
    return;
  }
  absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(r);
  // Every backup receives the new primary's copy: a single-machine commit of the old
  // primary may have reached some backups and not others. Logged before the promotion,
  // so that a restart that takes the region back as its own sends them too.
  std::vector<NodeId> due =
      rs.ok() ? std::vector<NodeId>(rs->backups().begin(), rs->backups().end()) : std::vector<NodeId>();
  if (absl::Status s = LogCopiesDue(r, due, /*wait=*/true); !s.ok()) {
    Log(self, absl::StrFormat("region %d: its due copies not logged, so not promoted: %s", r, s.ToString()));
    return;
  }
  // Durable before the region serves: a restart must take it back as its own.
  if (absl::Status s = LogRegionRecord(storage::NodeLogType::kRegionPromoted, r, copy->size(), /*wait=*/true);
      !s.ok()) {
    Log(self, absl::StrFormat("region %d: promotion not logged, so not taken: %s", r, s.ToString()));
    return;
  }
  {
    MutexLock lock(&grants_mu_);
    promoting_.insert(r);  // a holder query meanwhile is answered "ask again" (region_rescue.cc)
  }
  std::unique_ptr<Region> region = backups_->Take(r);
  absl::StatusOr<RegisteredRegion> registered = fabric_->RegisterRegion(*region);
  absl::Status adopted =
      registered.ok() ? allocator_->AdoptRegion(std::move(region), registered->capability) : registered.status();
  {
    MutexLock lock(&grants_mu_);
    promoting_.erase(r);
    grants_.erase(r);
  }
  if (!adopted.ok()) {
    Log(self, absl::StrFormat("region %d: promotion to primary failed: %s", r, adopted.ToString()));
    return;
  }
  allocator_->blocks().FindRegion(r)->set_frozen(true);  // before any thread can use it
  pending_copies_[r] = std::move(due);
  Log(self, absl::StrFormat("region %d promoted: this node is its primary in epoch %d", r, placement.epoch()));
}

void Node::StartHandoverLocked(alloc::LocalRegion* region, NodeId to) {
  const RegionId r = region->id();
  auto [it, fresh] = pending_handovers_.try_emplace(r, to);
  it->second = to;
  if (!fresh) return;
  // From now on: no lock (frozen), no slot and no block (leaving) in it here.
  region->set_frozen(true);
  region->set_leaving(true);
  if (pending_copies_.erase(r) > 0) (void)LogCopiesDue(r, {}, /*wait=*/false);  // the new primary's now
  for (size_t t = 0; t < loops_.size(); ++t) {
    RunInLoop(loops_[t]->loop(), [&] {
      if (alloc::ThreadAllocator* a = alloc_service_->thread(t)) a->ForgetRegion(r);
    });
  }
  Log(options_.node_id, absl::StrFormat("region %d: node %d is its primary now; handing it over", r, to));
}

void Node::OnCopyArrived(RegionId region) {
  // On a worker thread: never copies_mu_ here (the membership thread holds it while it
  // runs work on the worker threads).
  MutexLock lock(&mu_);
  arrived_.push_back(region);
  connect_cv_.SignalAll();
}

void Node::PromoteArrived() {
  std::vector<RegionId> arrived;
  {
    MutexLock lock(&mu_);
    arrived = std::move(arrived_);
    arrived_.clear();
  }
  if (arrived.empty()) return;
  for (;;) {
    std::shared_ptr<const membership::Placement> placement;
    {
      MutexLock lock(&mu_);
      if (stopping_) return;
      placement = placement_;
    }
    if (placement == nullptr) return;
    uint64_t configuring = 0;
    {
      MutexLock lock(&copies_mu_);
      configuring = configuring_epoch_;
      // Decided by the placement OnConfiguration applies last: a newer one may already
      // have been prepared for (PrepareFailover) without this promotion in view.
      if (placement->epoch() >= configuring) {
        for (RegionId r : arrived) {
          absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(r);
          // A handed-over region: this node is its primary and held no copy before.
          if (rs.ok() && rs->primary() == options_.node_id && allocator_->blocks().FindRegion(r) == nullptr) {
            PromoteCopyLocked(r, *placement);
          }
        }
        return;
      }
    }
    // A newer placement is on its way (OnConfiguration signals connect_cv_ once set).
    MutexLock lock(&mu_);
    connect_cv_.WaitFor(&mu_, absl::Seconds(1), [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return stopping_ || (placement_ != nullptr && placement_->epoch() >= configuring);
    });
  }
}

absl::Status Node::LogRegionRecord(storage::NodeLogType type, RegionId region, uint64_t bytes, bool wait) {
  return AppendRegionRecord(type, region, alloc::EncodeRegionCreated({region, bytes, options_.node_id}), wait);
}

absl::Status Node::LogCopiesDue(RegionId region, const std::vector<NodeId>& nodes, bool wait) {
  return AppendRegionRecord(storage::NodeLogType::kRegionCopiesDue, region, alloc::EncodeCopiesDue(region, nodes),
                            wait);
}

absl::Status Node::AppendRegionRecord(storage::NodeLogType type, RegionId region, const std::string& payload,
                                      bool wait) {
  storage::RecordLog* log = storage_->log();
  if (log == nullptr) return absl::OkStatus();
  if (!wait) {
    log->Append(storage::TypeByte(type), payload, [this, region](absl::Status s) {
      if (!s.ok()) Log(options_.node_id, absl::StrFormat("region %d: record not logged: %s", region, s.ToString()));
    });
    return absl::OkStatus();
  }
  struct Result {
    absl::Status status;
    Notification done;
  };
  auto result = std::make_shared<Result>();
  log->Append(storage::TypeByte(type), payload, [result](absl::Status s) {
    result->status = std::move(s);
    result->done.Notify();
  });
  result->done.WaitForNotification();
  return result->status;
}

bool Node::HandOverPending() {
  std::vector<std::pair<RegionId, NodeId>> work;
  {
    MutexLock lock(&copies_mu_);
    work.assign(pending_handovers_.begin(), pending_handovers_.end());
  }
  bool done = true;
  for (const auto& [region, to] : work) {
    if (!RegionDrained(region) || !messenger_->IsConnected(to)) {
      done = false;
      continue;
    }
    if (absl::Status s = CopyRegion(region, to); !s.ok()) {
      // A backup's copy may have reached it first (region_rescue.cc): then it holds the
      // region whole and refuses this one.
      if (!HoldsWhole(to, region)) {
        Log(options_.node_id, absl::StrFormat("region %d: handover to node %d failed (retrying): %s", region, to,
                                              s.ToString()));
        done = false;
        continue;
      }
      Log(options_.node_id, absl::StrFormat("region %d: node %d holds it already (a backup's copy)", region, to));
    }
    MutexLock lock(&copies_mu_);
    auto it = pending_handovers_.find(region);
    if (it == pending_handovers_.end() || it->second != to) continue;  // a newer configuration changed it
    pending_handovers_.erase(it);
    // The new primary holds it whole: this node never serves it again (it gets a backup
    // copy from the new primary if it is one), and a restart must not take it back.
    (void)allocator_->RetireRegion(region);
    (void)fabric_->DeregisterRegion(region);
    (void)LogRegionRecord(storage::NodeLogType::kRegionDropped, region, 0, /*wait=*/true);
    Log(options_.node_id, absl::StrFormat("region %d: handed over to node %d", region, to));
  }
  return done;
}

bool Node::RegionDrained(RegionId region) {
  if (tx_service_->recovery_locks().HeldIn(region) > 0) return false;
  for (size_t t = 0; t < loops_.size(); ++t) {
    size_t held = 0;
    RunInLoop(loops_[t]->loop(), [&] {
      if (tx::ThreadContext* ctx = tx_service_->context(t)) held = ctx->participant().LocksIn(region);
    });
    if (held > 0) return false;
  }
  return true;
}

void Node::AdmitCopy(size_t thread, RegionId region, NodeId from, absl::AnyInvocable<void(absl::Status)> then) {
  {
    // The copy must come from the region's primary in this node's configuration: then
    // this node has fenced the epoch that made it so (OnConfiguration fences before it
    // places), and no commit of an older primary can land on the copy after it.
    MutexLock lock(&mu_);
    absl::StatusOr<membership::ReplicaSet> rs =
        placement_ == nullptr ? absl::StatusOr<membership::ReplicaSet>(absl::UnavailableError("no configuration"))
                              : placement_->Lookup(region);
    // Or it is a handover: this node is the region's primary and does not hold it yet;
    // the region's previous primary sends it (its locks drained first).
    const bool backup = rs.ok() && rs->primary() == from && rs->Contains(options_.node_id);
    const bool handover =
        rs.ok() && rs->primary() == options_.node_id && allocator_->blocks().FindRegion(region) == nullptr;
    if (handover && !backup) {
      // One handover at a time, and none over a whole copy held here (a Begin would reset
      // the copy being promoted): a failed backup's handover and a rescue may race.
      MutexLock grants(&grants_mu_);
      const NodeId receiving = alloc_service_->copies_in_progress().Receiving(region);
      const bool whole = backups_->Find(region) != nullptr && alloc_service_->copies_in_progress().Complete(region);
      if (promoting_.contains(region) || whole || (receiving != kInvalidNode && receiving != from)) {
        return then(absl::UnavailableError(
            receiving != kInvalidNode && receiving != from
                ? absl::StrFormat("node %d receives region %d from node %d already", options_.node_id, region,
                                  receiving)
                : absl::StrFormat("node %d holds a whole copy of region %d already", options_.node_id, region)));
      }
    }
    if (!backup && !handover) {
      return then(absl::UnavailableError(absl::StrFormat(
          "node %d does not yet place region %d with primary %d and itself as a backup, nor as its new primary",
          options_.node_id, region, from)));
    }
  }
  // Every worker thread answers whether it keeps a record touching the region; the
  // answers meet on `thread`.
  struct Fan {
    size_t left;
    bool touched = false;
    absl::AnyInvocable<void(absl::Status)> then;
  };
  auto fan = std::make_shared<Fan>(Fan{loops_.size(), false, std::move(then)});
  for (size_t t = 0; t < loops_.size(); ++t) {
    loops_[t]->loop().Post([this, t, thread, region, fan] {
      tx::ThreadContext* ctx = tx_service_->context(t);
      const bool touched = ctx != nullptr && ctx->KeepsRecordsIn(region);
      loops_[thread]->loop().Post([this, region, fan, touched] {
        fan->touched |= touched;
        if (--fan->left > 0) return;
        fan->then(fan->touched ? absl::UnavailableError(absl::StrFormat(
                                     "node %d still keeps transaction records in region %d (being decided)",
                                     options_.node_id, region))
                               : absl::OkStatus());
      });
    });
  }
}

absl::Status Node::CopyRegion(RegionId region, NodeId to) {
  const alloc::LocalRegion* local = allocator_->blocks().FindRegion(region);
  if (local == nullptr) return absl::NotFoundError(absl::StrFormat("region %d is not held here", region));
  return SendCopy(local->region(), to);
}

absl::Status Node::SendCopy(const Region& region, NodeId to) {
  struct Result {
    absl::Status status = absl::UnknownError("unset");
    alloc::RegionCopyStats stats;
    Notification done;
  };
  auto result = std::make_shared<Result>();
  loops_[0]->loop().Post([this, &region, to, result] {
    alloc::SendRegionCopy(messenger_->thread(0), to, region,
                          [result](const absl::Status& s, const alloc::RegionCopyStats& stats) {
                            result->status = s;
                            result->stats = stats;
                            result->done.Notify();
                          });
  });
  const RegionId id = region.id();
  absl::Duration waited;
  while (!result->done.WaitForNotificationWithTimeout(kStopCheck)) {
    {
      MutexLock lock(&mu_);
      // The copy may go on reading `region` until the messenger is destroyed; the node's
      // regions and copies outlive that (Stop).
      if (stopping_) return absl::CancelledError(absl::StrFormat("the copy of region %d to node %d: stopping", id, to));
    }
    waited += kStopCheck;
    if (waited % kSlowCopy == absl::ZeroDuration()) {
      Log(options_.node_id, absl::StrFormat("region %d: the copy to node %d is still going after %s", id, to,
                                            absl::FormatDuration(waited)));
    }
  }
  if (result->status.ok()) {
    Log(options_.node_id, absl::StrFormat("region %d: copy sent to node %d: %d bytes in %.3f s (%.1f MB/s)", id,
                                          to, result->stats.bytes_sent, result->stats.seconds,
                                          result->stats.seconds > 0 ? result->stats.bytes_sent / 1e6 / result->stats.seconds
                                                                    : 0.0));
  }
  return result->status;
}

bool Node::ReplicatePending() {
  bool done = HandOverPending();
  std::shared_ptr<const membership::Placement> placement;
  {
    MutexLock lock(&mu_);
    placement = placement_;
  }
  std::vector<std::pair<RegionId, std::vector<NodeId>>> work;
  {
    MutexLock lock(&copies_mu_);
    work.assign(pending_copies_.begin(), pending_copies_.end());
  }
  for (auto& [region, targets] : work) {
    if (options_.hold_region_copies || !RegionDrained(region)) {
      done = false;
      continue;
    }
    const absl::StatusOr<membership::ReplicaSet> rs =
        placement != nullptr ? placement->Lookup(region) : absl::FailedPreconditionError("no placement yet");
    // Once linked (the cluster is whole again after a start: min_members), a target that
    // is no replica any more — in a list a restart resumed, from before the members
    // changed — is owed nothing; if it comes back, failover makes it due again. Before
    // that, a member missing from the configuration may just not be back yet.
    const bool settled = linked_.load(std::memory_order_acquire) && rs.ok();
    std::vector<NodeId> sent;
    for (NodeId to : targets) {
      if (settled && !rs->Contains(to)) {
        sent.push_back(to);
        continue;
      }
      if (!messenger_->IsConnected(to)) {
        done = false;
        continue;
      }
      if (absl::Status s = CopyRegion(region, to); !s.ok()) {
        Log(options_.node_id, absl::StrFormat("region %d: copy to node %d failed (retrying): %s", region, to,
                                              s.ToString()));
        done = false;
        continue;
      }
      sent.push_back(to);
    }
    MutexLock lock(&copies_mu_);
    auto it = pending_copies_.find(region);
    if (it == pending_copies_.end()) continue;  // a newer configuration settled it
    std::erase_if(it->second, [&](NodeId n) { return std::find(sent.begin(), sent.end(), n) != sent.end(); });
    if (!it->second.empty()) continue;
    pending_copies_.erase(it);
    (void)LogCopiesDue(region, {}, /*wait=*/false);  // if lost, a restart sends the copies again
    if (alloc::LocalRegion* local = allocator_->blocks().FindRegion(region)) local->set_frozen(false);
    Log(options_.node_id, absl::StrFormat("region %d: every backup holds a copy again", region));
  }
  return done;
}

}  // namespace farm::node
