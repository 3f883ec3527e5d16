// Regions whose primary holds nothing (failover.cc handles the rest of failover).
//
// Placement says who is a region's primary; it cannot say whether that member holds the
// region. Failover promotes a backup copy when the new primary held a copy before, and
// hands a region over when its old primary lives. Neither happens when the primary is a
// member that never held the region and the one that did is gone: a node that joined
// while the region's primary was dead (listed before the dead one left, or together
// with its leaving when the dead one was the configuration manager), one restarted
// empty under the old primary's id, or a survivor whose promotion a newer configuration
// overtook. The region's data is then only in its backups' copies.
//
// The fact placement lacks is asked for. A backup whose copy's source (the node that
// created or last sent it: BackupRegions::CreatorOf) left the configuration — or whose
// promotion here was overtaken — while another member is the region's primary asks that
// primary (kRegionHolderMsgId) whether it holds the region. A primary that serves it
// says so and the backup is done; one that holds a whole copy it promotes itself, or
// receives a copy, says "ask again" (a promotion may fail). One that holds none tells
// exactly one asker to hand its copy over; the grant lapses when that backup leaves the
// cluster or the replica set, or sends no copy within kGrantLease. The primary admits one
// handover at a time and none over a whole copy (AdmitCopy). The granted backup applies the survivors' retained
// single-machine commits to its copy (as a promotion does: tx/retained_commits.h),
// waits until no transaction record here touches the region (recovery decided them),
// and sends its copy; the primary admits it as a handover (AdmitCopy), promotes it
// (PromoteArrived), and sends every backup a copy before the region serves.
//
// Why one copy is as good as another: every backup of the set received every commit
// the old primary acknowledged (replication precedes it), the retained records make
// the unacknowledged single-machine ones all or nothing, and no commit reaches a copy
// once its primary fenced the epoch (no primary holding the region takes locks in it).
// Only a complete copy is sent (RegionCopyReceiver::Complete).
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/base/mutex.h"
#include "farm/node/node.h"
#include "farm/node/node_messages.h"

namespace farm::node {
namespace {

// How long a primary, and each member asked for retained records, has to answer.
constexpr absl::Duration kRescueTimeout = absl::Seconds(2);
// A grant whose backup sent no copy this long (its copy stopped being whole, or it is out
// of the replica set without leaving the cluster) goes to the next asker. A copy that
// arrives meanwhile keeps it: no grant while one does (AnswerHolder), and no second
// handover admitted while one arrives or a whole copy is held (AdmitCopy).
constexpr absl::Duration kGrantLease = absl::Seconds(10);

void Log(NodeId id, const std::string& line) { FARM_LOG(kInfo, "node %u: %s", id, line); }

}  // namespace

void Node::NoteRescuesLocked(const absl::flat_hash_set<NodeId>& departed, const membership::Placement& next) {
  const NodeId self = options_.node_id;
  for (RegionId r : backups_->Held()) {
    absl::StatusOr<membership::ReplicaSet> rs = next.Lookup(r);
    const NodeId source = backups_->CreatorOf(r);
    if (!rs.ok() || rs->primary() == self || !rs->Contains(self) || source == self) {
      rescues_.erase(r);
      continue;
    }
    // A promotion here that this configuration overtook (another member is primary now):
    // this copy may be the one to give it.
    const bool overtaken = pending_promotions_.erase(r) > 0;
    if (!overtaken && !departed.contains(source) && !rescues_.contains(r)) continue;
    rescues_[r] = Rescue{rs->primary(), next.epoch(), /*granted=*/false};
  }
  absl::erase_if(rescues_, [&](const auto& entry) { return backups_->Find(entry.first) == nullptr; });
}

void Node::LapseGrants(const membership::Configuration& config, const membership::Placement& placement) {
  MutexLock lock(&grants_mu_);
  absl::erase_if(grants_, [&](const auto& entry) {
    const membership::Member* m = config.Find(entry.second.to);
    absl::StatusOr<membership::ReplicaSet> rs = placement.Lookup(entry.first);
    return m == nullptr || m->incarnation != entry.second.incarnation || !rs.ok() ||
           rs->primary() != options_.node_id || !rs->Contains(entry.second.to);
  });
}

void Node::AnswerHolder(MsgThread& thread, const Message& message) {
  if (!message.expects_reply()) return;
  absl::StatusOr<HolderQuery> query = DecodeHolderQuery(message.payload);
  if (!query.ok()) {
    (void)thread.ReplyError(message.reply_to, query.status());
    return;
  }
  std::shared_ptr<const membership::Placement> placement;
  std::shared_ptr<const membership::Configuration> config;
  {
    MutexLock lock(&mu_);
    placement = placement_;
    config = placed_config_;
  }
  HolderReply reply;
  reply.epoch = placement != nullptr ? placement->epoch() : 0;
  if (placement == nullptr || config == nullptr || placement->epoch() != query->epoch) {
    reply.answer = HolderAnswer::kRetry;
    (void)thread.Reply(message.reply_to, EncodeHolderReply(reply));
    return;
  }
  absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(query->region);
  if (!rs.ok()) {
    (void)thread.ReplyError(message.reply_to, rs.status());
    return;
  }
  const RegionId r = query->region;
  // Held across the look at what this node holds: a promotion here (PromoteCopyLocked)
  // is then seen before it takes its copy (a backup copy), while it has taken it and not
  // adopted it yet (promoting_), or after (a region).
  {
    MutexLock lock(&grants_mu_);
    const absl::Time now = absl::Now();
    const bool adopted = allocator_->blocks().FindRegion(r) != nullptr;
    const bool whole_copy = backups_->Find(r) != nullptr && alloc_service_->copies_in_progress().Complete(r);
    const NodeId receiving = alloc_service_->copies_in_progress().Receiving(r);
    if (rs->primary() != options_.node_id) {
      reply.answer = HolderAnswer::kNotPrimary;
    } else if (adopted) {
      reply.answer = HolderAnswer::kHolds;
      grants_.erase(r);
    } else if (promoting_.contains(r) || whole_copy) {
      // Not "holds" until adopted: a promotion that fails leaves the askers asking.
      reply.answer = HolderAnswer::kPromotesItsCopy;
    } else if (receiving != kInvalidNode) {
      reply.answer = HolderAnswer::kRetry;  // a copy arrives: the grant, if any, stays
      if (auto it = grants_.find(r); it != grants_.end()) it->second.at = now;
    } else {
      const membership::Member* asker = config->Find(message.from);
      if (auto it = grants_.find(r); it != grants_.end() && it->second.to != message.from &&
                                     now - it->second.at > kGrantLease) {
        Log(options_.node_id, absl::StrFormat("region %d: node %d sent no copy in %s; the grant lapses", r,
                                              it->second.to, absl::FormatDuration(kGrantLease)));
        grants_.erase(it);
      }
      auto [it, fresh] =
          grants_.try_emplace(r, Grant{message.from, asker != nullptr ? asker->incarnation : 0, now});
      if (fresh && asker == nullptr) {
        grants_.erase(it);  // not a member: never the one to hand a region over
        reply.answer = HolderAnswer::kOtherHandsOver;
      } else {
        reply.answer = it->second.to == message.from ? HolderAnswer::kHandItOver
                                                     : HolderAnswer::kOtherHandsOver;
        if (fresh) {
          Log(options_.node_id, absl::StrFormat("region %d: this node is its primary and holds "
                                                "none of it; node %d hands its copy over",
                                                r, message.from));
        }
      }
    }
  }
  (void)thread.Reply(message.reply_to, EncodeHolderReply(reply));
}

absl::StatusOr<HolderReply> Node::AskHolder(NodeId primary, const HolderQuery& query) {
  struct Awaited {
    Mutex mu;
    absl::StatusOr<HolderReply> reply ABSL_GUARDED_BY(mu) = absl::UnknownError("no answer");
    Notification done;
  };
  auto awaited = std::make_shared<Awaited>();
  MsgThread& thread = messenger_->thread(0);
  std::string request = EncodeHolderQuery(query);
  thread.loop().Post([&thread, primary, awaited, request = std::move(request)] {
    auto set = [awaited](absl::StatusOr<HolderReply> reply) {
      {
        MutexLock lock(&awaited->mu);
        awaited->reply = std::move(reply);
      }
      awaited->done.Notify();
    };
    absl::Status sent = thread.Call(
        primary, kRegionHolderMsgId, request,
        [set](const absl::Status& s, absl::string_view bytes) {
          set(s.ok() ? DecodeHolderReply(bytes) : absl::StatusOr<HolderReply>(s));
        },
        kRescueTimeout);
    if (!sent.ok()) set(sent);
  });
  if (!awaited->done.WaitForNotificationWithTimeout(kRescueTimeout + absl::Seconds(1))) {
    return absl::UnavailableError(absl::StrFormat("node %d did not answer", primary));
  }
  MutexLock lock(&awaited->mu);
  return awaited->reply;
}

bool Node::HoldsWhole(NodeId primary, RegionId region) {
  uint64_t epoch = 0;
  {
    MutexLock lock(&mu_);
    if (placement_ == nullptr) return false;
    epoch = placement_->epoch();
  }
  absl::StatusOr<HolderReply> reply = AskHolder(primary, HolderQuery{region, epoch});
  return reply.ok() && reply->answer == HolderAnswer::kHolds;
}

bool Node::RescuePending() {
  std::shared_ptr<const membership::Placement> placement;
  {
    MutexLock lock(&mu_);
    placement = placement_;
  }
  absl::flat_hash_map<RegionId, Rescue> work;
  {
    MutexLock lock(&copies_mu_);
    work = rescues_;
  }
  if (work.empty()) return true;
  const NodeId self = options_.node_id;
  bool done = true;
  // Moves `r`'s entry on from `as` to `to` (away: nullopt), unless a newer
  // configuration changed it meanwhile.
  auto update = [&](RegionId r, const Rescue& as, std::optional<Rescue> to) {
    MutexLock lock(&copies_mu_);
    auto it = rescues_.find(r);
    if (it == rescues_.end() || it->second != as) return;
    if (to.has_value()) {
      it->second = *to;
    } else {
      rescues_.erase(it);
    }
  };
  for (auto& [r, rescue] : work) {
    if (placement == nullptr || placement->epoch() < rescue.epoch) {
      done = false;  // this node's placement is not the one that asked for it yet
      continue;
    }
    // Asked of the primary in this node's latest placement.
    absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(r);
    if (!rs.ok() || rs->primary() == self || !rs->Contains(self)) {
      update(r, rescue, std::nullopt);
      continue;
    }
    if (rs->primary() != rescue.primary || placement->epoch() != rescue.epoch) {
      const Rescue now{rs->primary(), placement->epoch(), /*granted=*/false};
      update(r, rescue, now);
      rescue = now;
    }
    if (!alloc_service_->copies_in_progress().Complete(r)) {
      Log(self, absl::StrFormat("region %d: its copy here is not whole, so not the one to give node %d", r,
                                rescue.primary));
      update(r, rescue, std::nullopt);
      continue;
    }
    if (!rescue.granted) {
      absl::StatusOr<HolderReply> reply = AskHolder(rescue.primary, HolderQuery{r, rescue.epoch});
      if (!reply.ok() || (reply->answer != HolderAnswer::kHolds && reply->answer != HolderAnswer::kHandItOver)) {
        done = false;  // asked again after kCopyRetry (until it holds), or with the next configuration
        continue;
      }
      if (reply->answer == HolderAnswer::kHolds) {
        update(r, rescue, std::nullopt);
        continue;
      }
      Rescue granted = rescue;
      granted.granted = true;
      update(r, rescue, granted);
      rescue = granted;
      Log(self, absl::StrFormat("region %d: its primary node %d holds none of it; this node hands its copy over",
                                r, rescue.primary));
    }
    if (absl::Status s = HandCopyOver(r, rescue.primary, rescue.epoch); !s.ok()) {
      // Asked again first: the primary may hold the region by now.
      Log(self, absl::StrFormat("region %d: its copy not handed to node %d yet (asking again): %s", r,
                                rescue.primary, s.ToString()));
      Rescue ask_again = rescue;
      ask_again.granted = false;
      update(r, rescue, ask_again);
      done = false;
      continue;
    }
    update(r, rescue, std::nullopt);
    Log(self, absl::StrFormat("region %d: its copy here handed over to node %d, its primary", r, rescue.primary));
  }
  return done;
}

absl::Status Node::HandCopyOver(RegionId region, NodeId to, uint64_t epoch) {
  std::vector<NodeId> ask;
  {
    MutexLock lock(&mu_);
    if (placement_ != nullptr) {
      for (NodeId n : placement_->members()) {
        if (n != options_.node_id) ask.push_back(n);
      }
    }
  }
  const std::vector<RegionId> regions{region};
  absl::StatusOr<std::vector<tx::LogRecord>> records = tx_service_->CollectRetained(ask, epoch, regions, kRescueTimeout);
  if (!records.ok()) return records.status();
  absl::StatusOr<size_t> applied = tx_service_->ApplyRetained(*records, regions, kRescueTimeout);
  if (!applied.ok()) return applied.status();
  if (AnyThreadKeepsRecordsIn(region)) {
    return absl::UnavailableError(
        absl::StrFormat("transaction records here still touch region %d (recovery decides them first)", region));
  }
  const Region* copy = backups_->Find(region);
  if (copy == nullptr) return absl::NotFoundError(absl::StrFormat("the copy of region %d is gone", region));
  Log(options_.node_id, absl::StrFormat("region %d: %d retained commit records from %d members, %d entries applied "
                                        "to the copy here",
                                        region, records->size(), ask.size(), *applied));
  return SendCopy(*copy, to);
}

bool Node::AnyThreadKeepsRecordsIn(RegionId region) {
  for (size_t t = 0; t < loops_.size(); ++t) {
    bool keeps = false;
    RunInLoop(loops_[t]->loop(), [&] {
      if (tx::ThreadContext* ctx = tx_service_->context(t)) keeps = ctx->KeepsRecordsIn(region);
    });
    if (keeps) return true;
  }
  return false;
}

}  // namespace farm::node
