// Node::ReconcileRecoveredRegions: after a restart, the single-machine commits that a
// crash caught while they were being replicated are made all or nothing across the
// replicas of each region this node is the primary of, before the region serves.
//
// Why it is needed. A single-machine commit's primary logs its record and sends it to
// the backups at once; each backup logs and applies it on arrival. A crash of the
// whole cluster can keep the record in some of those logs and not in others — the
// primary's (its group buffer not yet written) or a backup's — and each replays its own:
// the copies then disagree, and since a later write of the object is applied at a
// backup only if the backup's copy is at the version the primary locked it from, they
// keep disagreeing, until a failover serves the backup's copy (an acknowledged write
// lost). No such commit was acknowledged (that waits for every replica's log), so either
// outcome is allowed: the rule here is the protocol's own, commit once any replica has
// it (thread_context.h, "CommitSingleMachine").
//
// How. Each replica's replay lists the records that may be missing elsewhere
// (tx::ReplayResult::retained: the node's own commits without their decision, and the
// backups' records no watermark of their sender had passed). The restarted primary
// gathers those of its regions from every backup (kTxRetainedMsgId, which answers them
// with the live retained records), adds its own, applies what its copies lack and has
// every backup do the same (kTxReconcileMsgId), each durably, before its regions are
// adopted. Applying is idempotent (an entry applies only to an object still at the
// version it was locked from), so the order in which replicas do this does not matter.
// A backup that does not answer is asked again (the adoption is retried); one that
// left the configuration gets a whole copy of the region when it returns. Only once
// --min_members hold data in the configuration: with fewer, the replica sets lack the
// members still starting (a cluster started with fewer than all its members is one
// whose joiners get whole copies: failover.cc).
#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "farm/base/log.h"
#include "farm/node/node.h"

namespace farm::node {
namespace {

// How long a backup has to answer at each step.
constexpr absl::Duration kReconcileTimeout = absl::Seconds(2);

}  // namespace

absl::Status Node::ReconcileRecoveredRegions(const membership::Placement& placement) {
  const NodeId self = options_.node_id;
  // The replica sets are the cluster's only once min_members are back: before, a region's
  // backups that have not restarted yet are not in them (and, the node still starting,
  // no copy is sent when they join: they come back with their data).
  if (placement.members().size() < options_.min_members) {
    return absl::UnavailableError(absl::StrFormat("waiting for %d members that hold data (epoch %d has %d)",
                                                  options_.min_members, placement.epoch(),
                                                  placement.members().size()));
  }
  std::vector<RegionId> regions;
  std::vector<NodeId> backups;
  for (RegionId id : backups_->Held()) {
    if (backups_->CreatorOf(id) != self) continue;
    absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(id);
    if (!rs.ok() || rs->primary() != self) continue;
    regions.push_back(id);
    for (NodeId b : rs->backups()) {
      if (std::find(backups.begin(), backups.end(), b) == backups.end()) backups.push_back(b);
    }
  }
  if (regions.empty() || backups.empty()) return absl::OkStatus();
  std::sort(regions.begin(), regions.end());
  std::vector<tx::LogRecord> records = tx_service_->RestartRetained(regions);
  // Epoch 0: answered at once (no failover's fence to wait for); a backup's replay fixed
  // what it lists.
  absl::StatusOr<std::vector<tx::LogRecord>> gathered =
      tx_service_->CollectRetained(backups, /*epoch=*/0, regions, kReconcileTimeout);
  if (!gathered.ok()) return gathered.status();
  absl::flat_hash_set<uint64_t> seen;
  for (const tx::LogRecord& r : records) seen.insert(r.transaction);
  for (tx::LogRecord& r : *gathered) {
    if (seen.insert(r.transaction).second) records.push_back(std::move(r));
  }
  if (records.empty()) return absl::OkStatus();
  absl::StatusOr<size_t> applied = tx_service_->ApplyRetained(records, regions, kReconcileTimeout);
  if (!applied.ok()) return applied.status();
  for (NodeId b : backups) {
    if (absl::Status s = tx_service_->PushRetained(b, records, regions, kReconcileTimeout); !s.ok()) return s;
  }
  // A clean stop leaves each sender thread's last record here too (no later watermark
  // passed it): usually nothing is missing anywhere.
  const LogLevel level = *applied > 0 ? LogLevel::kInfo : LogLevel::kDebug;
  if (LogEnabled(level)) {
    LogLine(level, absl::StrFormat("node %u: region(s) %s: %d commit record(s) the restart caught in replication "
                                   "reconciled with backup(s) %s (%d entries applied here)",
                                   self, absl::StrJoin(regions, ","), records.size(), absl::StrJoin(backups, ","),
                                   *applied));
  }
  return absl::OkStatus();
}

}  // namespace farm::node
