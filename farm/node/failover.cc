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

constexpr absl::Duration kCopyTimeout = absl::Minutes(10);

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
  tx::FailoverFence fence;
  fence.epoch = next.epoch();
  fence.departed = departed;
  for (RegionId r : backups_->Held()) {
    absl::StatusOr<membership::ReplicaSet> rs = next.Lookup(r);
    if (rs.ok() && rs->primary() == self) fence.promoting.insert(r);
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
  for (RegionId r : fence.promoting) {
    const Region* copy = backups_->Find(r);
    if (copy == nullptr) continue;
    // Durable before the region serves: a restart must take it back as its own.
    if (absl::Status s = LogPromotion(r, copy->size()); !s.ok()) {
      Log(self, absl::StrFormat("region %d: promotion not logged, so not taken: %s", r, s.ToString()));
      continue;
    }
    std::unique_ptr<Region> region = backups_->Take(r);
    absl::StatusOr<RegisteredRegion> registered = fabric_->RegisterRegion(*region);
    absl::Status adopted = registered.ok() ? allocator_->AdoptRegion(std::move(region), registered->capability)
                                           : registered.status();
    if (!adopted.ok()) {
      Log(self, absl::StrFormat("region %d: promotion to primary failed: %s", r, adopted.ToString()));
      continue;
    }
    allocator_->blocks().FindRegion(r)->set_frozen(true);  // before any thread can use it
    absl::StatusOr<membership::ReplicaSet> rs = next.Lookup(r);
    // Every backup receives the new primary's copy: a single-machine commit of the old
    // primary may have reached some backups and not others.
    pending_copies_[r] = rs.ok() ? std::vector<NodeId>(rs->backups().begin(), rs->backups().end())
                                 : std::vector<NodeId>();
    Log(self, absl::StrFormat("region %d promoted: this node is its primary in epoch %d", r, next.epoch()));
  }
  // This node's other regions: backups that joined a replica set need a copy.
  for (const alloc::LocalRegion* region : allocator_->blocks().Regions()) {
    const RegionId r = region->id();
    if (fence.promoting.contains(r)) continue;
    absl::StatusOr<membership::ReplicaSet> now = next.Lookup(r);
    absl::StatusOr<membership::ReplicaSet> before = previous.Lookup(r);
    if (!now.ok() || now->primary() != self) continue;
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
        allocator_->blocks().FindRegion(r)->set_frozen(false);
      }
      continue;
    }
    allocator_->blocks().FindRegion(r)->set_frozen(true);
    pending_copies_[r] = std::move(due);
  }
  return !departed.empty();
}

absl::Status Node::LogPromotion(RegionId region, uint64_t bytes) {
  storage::RecordLog* log = storage_->log();
  if (log == nullptr) return absl::OkStatus();
  struct Result {
    absl::Status status;
    Notification done;
  };
  auto result = std::make_shared<Result>();
  log->Append(storage::TypeByte(storage::NodeLogType::kRegionPromoted),
              alloc::EncodeRegionCreated({region, bytes, options_.node_id}), [result](absl::Status s) {
                result->status = std::move(s);
                result->done.Notify();
              });
  result->done.WaitForNotification();
  return result->status;
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
    if (!rs.ok() || rs->primary() != from || !rs->Contains(options_.node_id)) {
      return then(absl::UnavailableError(absl::StrFormat(
          "node %d does not yet place region %d with primary %d and itself as a backup", options_.node_id, region,
          from)));
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
  struct Result {
    absl::Status status = absl::UnknownError("unset");
    alloc::RegionCopyStats stats;
    Notification done;
  };
  auto result = std::make_shared<Result>();
  loops_[0]->loop().Post([this, local, to, result] {
    alloc::SendRegionCopy(messenger_->thread(0), to, local->region(),
                          [result](const absl::Status& s, const alloc::RegionCopyStats& stats) {
                            result->status = s;
                            result->stats = stats;
                            result->done.Notify();
                          });
  });
  if (!result->done.WaitForNotificationWithTimeout(kCopyTimeout)) {
    return absl::DeadlineExceededError(absl::StrFormat("the copy of region %d to node %d took over %s", region, to,
                                                       absl::FormatDuration(kCopyTimeout)));
  }
  if (result->status.ok()) {
    Log(options_.node_id, absl::StrFormat("region %d: copy sent to node %d: %d bytes in %.3f s (%.1f MB/s)", region,
                                          to, result->stats.bytes_sent, result->stats.seconds,
                                          result->stats.seconds > 0 ? result->stats.bytes_sent / 1e6 / result->stats.seconds
                                                                    : 0.0));
  }
  return result->status;
}

bool Node::ReplicatePending() {
  std::vector<std::pair<RegionId, std::vector<NodeId>>> work;
  {
    MutexLock lock(&copies_mu_);
    work.assign(pending_copies_.begin(), pending_copies_.end());
  }
  bool done = true;
  for (auto& [region, targets] : work) {
    if (!RegionDrained(region)) {
      done = false;
      continue;
    }
    std::vector<NodeId> sent;
    for (NodeId to : targets) {
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
    if (alloc::LocalRegion* local = allocator_->blocks().FindRegion(region)) local->set_frozen(false);
    Log(options_.node_id, absl::StrFormat("region %d: every backup holds a copy again", region));
  }
  return done;
}

}  // namespace farm::node
