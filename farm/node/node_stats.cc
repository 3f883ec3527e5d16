// Node's counters for the admin port (farm_admin stats): membership, links, per-thread
// loop and transaction counters, the log, and the hosted services' own.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/node/node.h"
#include "membership/placement.h"

namespace farm::node {
namespace {

// How long Stats waits for a worker thread to report its counters.
constexpr absl::Duration kStatsTimeout = absl::Milliseconds(500);

// FNV-1a over the replica sets of 4096 region ids drawn by a fixed SplitMix64 sequence.
uint64_t PlacementDigest(const membership::Configuration& config) {
  absl::StatusOr<membership::Placement> placement = membership::Placement::Create(config);
  if (!placement.ok()) return 0;
  const uint64_t space = uint64_t{placement->positions_per_ring()} * placement->virtual_rings();
  uint64_t digest = 0xcbf29ce484222325ull, x = 0;
  for (int i = 0; i < 4096; ++i) {
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    absl::StatusOr<membership::ReplicaSet> set =
        placement->Lookup(static_cast<RegionId>(1 + z % (space - 1)));
    if (!set.ok()) continue;
    for (NodeId n : set->nodes()) digest = (digest ^ n) * 0x100000001b3ull;
  }
  return digest;
}

}  // namespace

NodeStats Node::Stats() const {
  NodeStats s;
  s.set_node_id(options_.node_id);
  s.set_cluster(options_.cluster);
  s.set_backend(backend_);
  s.set_uptime_seconds(absl::ToDoubleSeconds(absl::Now() - started_));
  if (!started_up_.load(std::memory_order_acquire)) {
    s.set_last_error("starting");
    return s;
  }
  {
    const membership::MembershipStatus m = membership_->status();
    s.set_epoch(m.epoch);
    s.set_serving(m.serving);
    s.set_membership(m.source);
    s.set_session(m.session);
    s.set_manager(m.manager);
    s.set_last_error(m.last_error);
    if (absl::Status failed = log_failure(); !failed.ok()) {
      s.set_last_error(absl::StrCat("left the cluster: the log failed: ", failed.message()));
    }
    s.set_locator(fabric_->locator());
    if (auto config = membership_->current()) {
      s.set_placement_digest(PlacementDigest(*config));
      uint32_t connected = 0;
      for (const membership::Member& member : config->members) {
        if (member.id != options_.node_id && messenger_->IsConnected(member.id)) ++connected;
      }
      s.set_connected_peers(connected);
    }
  }
  for (size_t t = 0; t < loops_.size(); ++t) {
    // Per-thread counters belong to the loop's thread: read them there, but never wait
    // long for a busy or wedged loop (the admin port must stay responsive). The snapshot
    // is shared, so a late read lands in memory that still exists.
    struct Snapshot {
      ThreadStats stats;
      Notification done;
    };
    auto snapshot = std::make_shared<Snapshot>();
    loops_[t]->loop().Post([this, t, snapshot] {
      const EventLoopStats& ls = loops_[t]->loop().stats();
      const MsgThreadStats& ms = messenger_->thread(t).stats();
      snapshot->stats.set_loop_iterations(ls.iterations);
      snapshot->stats.set_loop_events(ls.events);
      snapshot->stats.set_loop_parks(ls.parks);
      snapshot->stats.set_messages_sent(ms.sent);
      snapshot->stats.set_messages_received(ms.received);
      snapshot->stats.set_calls_failed(ms.calls_failed);
      snapshot->done.Notify();
    });
    if (snapshot->done.WaitForNotificationWithTimeout(kStatsTimeout)) {
      *s.add_threads() = snapshot->stats;
    } else {
      s.add_threads();  // zeros: unknown
      s.set_last_error(absl::StrCat("worker thread ", t, " did not answer within ",
                                    absl::FormatDuration(kStatsTimeout)));
    }
  }
  {
    const LogState log = storage_->State();
    LogStats* l = s.mutable_log();
    l->set_path(log.path);
    l->set_policy(log.policy);
    l->set_file_bytes(log.file_bytes);
    l->set_records_written(log.records_written);
    l->set_syncs(log.syncs);
    l->set_boot(log.boot);
    l->set_replayed_records(log.replayed.records);
    l->set_replayed_transactions(log.replayed.transactions_applied);
    l->set_replay_seconds(log.replay_seconds);
    l->set_error(log.error);
    l->set_has_checkpoint(log.has_checkpoint);
    l->set_checkpoint_segment(log.last_checkpoint_segment);
    l->set_checkpoint_bytes(log.checkpoint_bytes);
    l->set_checkpoints(log.checkpoints);
    l->set_checkpoint_seconds(log.last_checkpoint_seconds);
    l->set_checkpoint_age_seconds(log.last_checkpoint_age_seconds);
    l->set_checkpoint_error(log.checkpoint_error);
  }
  for (const alloc::LocalRegion* region : allocator_->blocks().Regions()) {
    RegionStats* r = s.add_regions();
    r->set_id(region->id());
    r->set_bytes(region->bytes());
    r->set_frozen(region->frozen());
  }
  {
    MutexLock lock(&copies_mu_);
    for (RegionStats& r : *s.mutable_regions()) {
      auto it = pending_copies_.find(r.id());
      if (it != pending_copies_.end()) r.mutable_copies_due()->Add(it->second.begin(), it->second.end());
    }
  }
  MutexLock lock(&counters_mu_);
  for (const auto& [service, source] : service_counters_) {
    ServiceStats* stats = s.add_services();
    stats->set_service(service);
    for (const auto& [name, value] : source()) {
      ServiceCounter* c = stats->add_counters();
      c->set_name(name);
      c->set_value(value);
    }
  }
  return s;
}

void Node::AddServiceCounters(const std::string& service, CounterSource source) {
  MutexLock lock(&counters_mu_);
  service_counters_[service] = std::move(source);
}

void Node::RemoveServiceCounters(const std::string& service) {
  MutexLock lock(&counters_mu_);
  service_counters_.erase(service);
}

}  // namespace farm::node
