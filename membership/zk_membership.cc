#include "membership/zk_membership.h"

#include <algorithm>
#include <cstdio>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "farm/base/log.h"
#include "membership/lease_clock.h"

namespace farm::membership {
namespace {

constexpr absl::Duration kRetryPause = absl::Milliseconds(500);
// Watches re-armed this often even without events: a safety net, not the mechanism.
constexpr absl::Duration kRefreshInterval = absl::Seconds(2);

// How long an answered heartbeat leases the node, of the session timeout T the server
// granted: the server expires the session no sooner than T after the heartbeat's send,
// and the rest, T/4, is the margin for the request in hand when the lease ends.
int64_t LeaseSpanNs(int64_t session_timeout_ns) { return session_timeout_ns / 4 * 3; }

// Members equal for configuration purposes: same process, same session, same offer.
bool SameMembers(const std::vector<Member>& a, const std::vector<Member>& b) { return a == b; }

}  // namespace

std::string ZkMembership::Root(absl::string_view cluster) { return absl::StrCat("/farm/", cluster); }

absl::StatusOr<std::unique_ptr<ZkMembership>> ZkMembership::Create(
    const ZkMembershipOptions& options) {
  if (options.zookeeper.empty()) return absl::InvalidArgumentError("no ZooKeeper address");
  if (options.cluster.empty() || absl::StrContains(options.cluster, '/')) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster name '", options.cluster, "' must be non-empty without '/'"));
  }
  if (absl::Status s = ValidateMember(options.self); !s.ok()) return s;
  if (options.replication < 1 || options.replication > kMaxReplication ||
      options.virtual_rings < 1 || options.virtual_rings > kMaxVirtualRings) {
    return absl::InvalidArgumentError("replication or virtual ring count out of range");
  }
  return std::unique_ptr<ZkMembership>(new ZkMembership(options));
}

ZkMembership::ZkMembership(const ZkMembershipOptions& options)
    : options_(options), root_(Root(options.cluster)), gate_(options.self.id) {
  gate_.ExpireLease();  // held only once a session answers
}

ZkMembership::~ZkMembership() { Stop(); }

void ZkMembership::Log(const std::string& line) const {
  FARM_LOG(kInfo, "membership[node %u]: %s", options_.self.id, line);
}

void ZkMembership::SetError(const absl::Status& status) {
  Log(status.ToString());
  MutexLock lock(&mu_);
  last_error_ = status.ToString();
}

absl::Status ZkMembership::Start(ConfigCallback on_config) {
  on_config_ = std::move(on_config);
  if (absl::Status s = Join(); !s.ok()) {
    client_.reset();
    return s;
  }
  Refresh();
  thread_ = std::thread([this] { Run(); });
  bool joined = false, stopped = false;
  std::string last_error;
  absl::Status refused;
  {
    MutexLock lock(&mu_);
    // Joined: a configuration lists this node with this session (the gate checks it).
    joined = cv_.WaitFor(&mu_, options_.join_timeout, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return stopping_ || gate_.member() || !refused_.ok();
    });
    stopped = stopping_;
    last_error = last_error_;
    refused = refused_;
  }
  if (joined && !stopped && refused.ok()) return absl::OkStatus();
  Stop();  // leave: no registration or election node outlives a failed Start
  if (!refused.ok()) return refused;
  if (stopped) return absl::CancelledError("membership stopped while joining");
  return absl::DeadlineExceededError(absl::StrFormat(
      "node %d registered but no configuration included it within %s (is a configuration "
      "manager running? last error: %s)",
      options_.self.id, absl::FormatDuration(options_.join_timeout),
      last_error.empty() ? "none" : last_error));
}

void ZkMembership::Stop() {
  gate_.Fence();  // serve nothing from here on
  {
    MutexLock lock(&mu_);
    if (stopping_ && !thread_.joinable() && client_ == nullptr) return;
    stopping_ = true;
    cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  client_.reset();  // closing the session removes our ephemeral nodes at once
  MutexLock lock(&mu_);
  session_ = ZkSessionState::kClosed;
  manager_ = false;
}

std::shared_ptr<const Configuration> ZkMembership::current() const {
  MutexLock lock(&mu_);
  return config_;
}

MembershipStatus ZkMembership::status() const {
  MembershipStatus s;
  s.source = absl::StrCat("zookeeper ", options_.zookeeper);
  s.serving = gate_.serving();
  s.epoch = gate_.epoch();
  MutexLock lock(&mu_);
  s.session = ZkSessionStateName(session_);
  s.manager = manager_;
  s.last_error = last_error_;
  return s;
}

absl::Status ZkMembership::Join() {
  ZkClient::Options zo;
  zo.hosts = options_.zookeeper;
  zo.session_timeout = options_.session_timeout;
  zo.connect_timeout = options_.connect_timeout;
  zo.heartbeat_interval = std::max(options_.session_timeout / 10, absl::Milliseconds(10));
  zo.on_heartbeat = [this](int64_t sent_ns, int64_t session_timeout_ns) {
    gate_.ExtendLease(sent_ns + LeaseSpanNs(session_timeout_ns));
  };
  const int64_t connecting_ns = LeaseClockNowNs();  // the session begins after this
  absl::StatusOr<std::unique_ptr<ZkClient>> client = ZkClient::Connect(zo, [this](const ZkEvent& e) {
    if (options_.on_zookeeper_event) options_.on_zookeeper_event();
    MutexLock lock(&mu_);
    events_.push_back(e);
    cv_.SignalAll();
  });
  if (!client.ok()) return client.status();
  client_ = std::move(*client);
  gate_.SetSession(client_->session_id());
  gate_.ExtendLease(connecting_ns + LeaseSpanNs(absl::ToInt64Nanoseconds(client_->negotiated_timeout())));
  for (const char* dir : {"/members", "/election", "/removed"}) {
    if (absl::Status s = client_->EnsurePath(absl::StrCat(root_, dir)); !s.ok()) return s;
  }
  if (absl::Status s = CheckNotRemoved(); !s.ok()) return s;
  if (absl::Status s = Register(); !s.ok()) return s;
  absl::StatusOr<std::string> election = CreateElectionNode();
  if (!election.ok()) return election.status();
  election_node_ = *election;
  config_version_ = -1;
  {
    MutexLock lock(&mu_);
    session_ = ZkSessionState::kConnected;
  }
  Log(absl::StrFormat("registered with ZooKeeper %s (session %x, timeout %s)", options_.zookeeper,
                      client_->session_id(), absl::FormatDuration(client_->negotiated_timeout())));
  return absl::OkStatus();
}

// Removal markers: ROOT/removed/<id>, a persistent znode holding the epoch of the first
// configuration without that member, written by a survivor (zk_membership.h). A cold
// start (every member restarting) writes none: a member's first configuration has no
// predecessor it applied, and the members missing from it have not failed, they are not
// back yet.
absl::Status ZkMembership::CheckNotRemoved() {
  const std::string marker = absl::StrCat(root_, "/removed/", options_.self.id);
  if (!options_.holds_data) {
    absl::Status s = client_->Delete(marker, -1);  // a new member now
    return absl::IsNotFound(s) ? absl::OkStatus() : s;
  }
  absl::StatusOr<ZkNodeData> removed = client_->Get(marker, false);
  if (absl::IsNotFound(removed.status())) return absl::OkStatus();
  if (!removed.ok()) return removed.status();
  return absl::FailedPreconditionError(absl::StrFormat(
      "node %d was removed from cluster '%s' in epoch %s while the others ran on: its data directory is "
      "stale (their copies moved on). Start it with an empty data directory to rejoin as a new member",
      options_.self.id, options_.cluster, removed->data));
}

absl::Status ZkMembership::MarkDeparted(const Configuration& next, int32_t version) {
  if (options_.self.compute_only) return absl::OkStatus();  // holds nothing that moves on
  const Member* self = next.Find(options_.self.id);
  if (self == nullptr || self->incarnation != options_.self.incarnation) return absl::OkStatus();
  // Every data member seen since this process started, and not since marked, that
  // `next` lacks as a data member (gone, or back compute-only: placed nothing either
  // way): failover may promote its regions here now — also when it left in a
  // configuration applied before failover was active (nothing was marked then).
  std::vector<NodeId> unmarked;
  for (NodeId id : seen_data_members_) {
    const Member* now = next.Find(id);
    if ((now == nullptr || now->compute_only) && !marked_.contains(id)) unmarked.push_back(id);
  }
  std::sort(unmarked.begin(), unmarked.end());
  const std::string config_path = absl::StrCat(root_, "/config");
  const std::string removed_dir = absl::StrCat(root_, "/removed");
  for (int attempt = 0; !unmarked.empty(); ++attempt) {
    // All in one multi-op with the check: marked only while `next` is current, all or
    // none (a configuration that brings one back must not find it marked).
    std::vector<ZkOp> ops = {ZkOp{ZkOp::Kind::kCheck, config_path, "", version}};
    std::vector<NodeId> creating;
    for (NodeId id : unmarked) {
      const std::string marker = absl::StrCat(removed_dir, "/", id);
      absl::StatusOr<bool> exists = client_->Exists(marker, false);
      if (!exists.ok()) return exists.status();
      if (*exists) {
        marked_.insert(id);  // another survivor's (or one from before this node ran)
        continue;
      }
      ops.push_back(ZkOp{ZkOp::Kind::kCreate, marker, absl::StrCat(next.epoch), -1});
      creating.push_back(id);
    }
    if (creating.empty()) break;
    absl::Status s = client_->Multi(ops);
    if (s.ok()) {
      for (NodeId id : creating) marked_.insert(id);
      Log(absl::StrFormat("marked node(s) %s removed: epoch %d runs on without them", absl::StrJoin(creating, ","),
                          next.epoch));
      break;
    }
    const bool retry = attempt < 3 && (absl::IsAlreadyExists(s) || absl::IsNotFound(s));
    if (!retry) return absl::Status(s.code(), absl::StrCat("removal markers: ", s.message()));
    // Another survivor made one meanwhile; or the markers' directory went (made again
    // here; a missing configuration fails the check again and is read anew).
    if (absl::IsNotFound(s)) {
      if (absl::Status made = client_->EnsurePath(removed_dir); !made.ok()) return made;
    }
    unmarked = std::move(creating);
  }
  return absl::OkStatus();
}

void ZkMembership::NoteMembers(const Configuration& applied) {
  for (const Member& m : applied.members) {
    if (m.compute_only) continue;
    seen_data_members_.insert(m.id);
    marked_.erase(m.id);  // back: a later departure is marked anew
  }
}

absl::Status ZkMembership::Register() {
  Member self = options_.self;
  self.session = client_->session_id();
  absl::StatusOr<std::string> data = EncodeRegistration(options_.cluster, self);
  if (!data.ok()) return data.status();
  const std::string path = absl::StrCat(root_, "/members/", self.id);
  // A previous process with this id may still hold the znode until its session
  // expires; a live one holds it for good, which is a configuration error.
  // The server may have granted a longer timeout than asked for (it clamps to its
  // bounds): wait that long for a dead predecessor's session to expire.
  const absl::Time give_up = absl::Now() +
                             std::max(options_.session_timeout, client_->negotiated_timeout()) +
                             absl::Seconds(2);
  if (options_.before_register) options_.before_register();
  for (;;) {
    absl::StatusOr<std::string> created = client_->Create(path, *data, ZkNodeMode::kEphemeral);
    if (created.ok()) return absl::OkStatus();
    // A create that timed out (a slow server: Unavailable) may still have been applied:
    // the znode found then is this registration if it names this session and incarnation.
    const bool exists = absl::IsAlreadyExists(created.status());
    if (exists) {
      if (absl::StatusOr<ZkNodeData> held = client_->Get(path, false); held.ok()) {
        absl::StatusOr<Member> m = DecodeRegistration(held->data, options_.cluster);
        if (m.ok() && m->session == self.session && m->incarnation == self.incarnation) return absl::OkStatus();
      }
    } else if (!absl::IsUnavailable(created.status())) {
      return created.status();
    }
    if (!exists && absl::Now() > give_up) return created.status();
    if (absl::Now() > give_up) {
      std::string holder = "unknown";
      if (absl::StatusOr<ZkNodeData> other = client_->Get(path, false); other.ok()) {
        if (absl::StatusOr<Member> m = DecodeRegistration(other->data, options_.cluster); m.ok()) {
          holder = absl::StrFormat("incarnation %x on host %s", m->incarnation, m->host);
        }
      }
      return absl::AlreadyExistsError(absl::StrFormat(
          "node id %d is registered by another live process (%s)", self.id, holder));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

// The election znode's data names this node and its session, so that a create that
// timed out (the server may have applied it) finds its own node instead of making a
// second: a session with two would not know the lower one as its own, and as the
// oldest candidate, no one would manage the cluster.
absl::StatusOr<std::string> ZkMembership::CreateElectionNode() {
  const std::string dir = absl::StrCat(root_, "/election");
  const std::string mine = absl::StrCat(options_.self.id, "/", client_->session_id());
  const absl::Time give_up = absl::Now() + std::max(options_.session_timeout, client_->negotiated_timeout());
  if (options_.before_election) options_.before_election();
  for (;;) {
    absl::StatusOr<std::string> created = client_->Create(absl::StrCat(dir, "/m-"), mine, ZkNodeMode::kEphemeralSequential);
    if (created.ok() || !absl::IsUnavailable(created.status())) return created;
    // Timed out or lost with the connection: applied or not, the server knows.
    for (;;) {
      absl::StatusOr<std::vector<std::string>> candidates = client_->GetChildren(dir, /*watch=*/false);
      if (candidates.ok()) {
        for (const std::string& name : *candidates) {
          absl::StatusOr<ZkNodeData> node = client_->Get(absl::StrCat(dir, "/", name), false);
          if (node.ok() && node->data == mine) return absl::StrCat(dir, "/", name);
        }
        break;  // not applied: create it
      }
      if (!absl::IsUnavailable(candidates.status()) || absl::Now() > give_up) return candidates.status();
      absl::SleepFor(absl::Milliseconds(100));
    }
    if (absl::Now() > give_up) return created.status();
    absl::SleepFor(absl::Milliseconds(100));
  }
}

void ZkMembership::Run() {
  absl::Time next_refresh = absl::Now() + kRefreshInterval;
  for (;;) {
    std::deque<ZkEvent> events;
    {
      MutexLock lock(&mu_);
      cv_.WaitFor(&mu_, absl::Milliseconds(200), [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || !events_.empty();
      });
      if (stopping_) return;
      events.swap(events_);
    }
    bool refresh = absl::Now() >= next_refresh;
    for (const ZkEvent& e : events) {
      if (e.type == ZkEvent::Type::kSession) {
        OnSessionEvent(e);
      } else {
        refresh = true;
      }
    }
    if (client_ == nullptr && !options_.rejoin_after_expiry) {
      if (!gave_up_) {
        gave_up_ = true;
        Log("session expired: this node's data is stale now (the cluster moved its regions on), so it "
            "stays out of the cluster; restart it with an empty data directory to rejoin");
        SetError(absl::FailedPreconditionError(
            "removed from the cluster (session expired); restart with an empty data directory to rejoin"));
      }
      continue;
    }
    if (client_ == nullptr) {  // expired: rejoin with a new session
      if (absl::Status s = Join(); !s.ok()) {
        client_.reset();
        SetError(s);
        absl::SleepFor(kRetryPause);
        continue;
      }
      Log("rejoined after session expiry; serving again once a configuration includes us");
      refresh = true;
    }
    if (refresh && client_->state() == ZkSessionState::kConnected) {
      Refresh();
      next_refresh = absl::Now() + kRefreshInterval;
    }
  }
}

void ZkMembership::OnSessionEvent(const ZkEvent& event) {
  {
    MutexLock lock(&mu_);
    session_ = event.state;
  }
  switch (event.state) {
    case ZkSessionState::kConnected:
      break;  // the lease was renewed in the client's callback
    case ZkSessionState::kConnecting:
      Log("lost the ZooKeeper connection; fenced when the lease runs out unless an answer renews it");
      break;
    case ZkSessionState::kExpired:
    case ZkSessionState::kAuthFailed:
    case ZkSessionState::kClosed:
      gate_.Fence();
      SetError(absl::UnavailableError(absl::StrCat("ZooKeeper session ",
                                                   ZkSessionStateName(event.state),
                                                   ": fenced until rejoined")));
      {
        MutexLock lock(&mu_);
        manager_ = false;
      }
      client_.reset();  // our ephemeral nodes are gone; Run rejoins
      break;
  }
}

void ZkMembership::Refresh() {
  // Our registration vanished while the session lives (deleted by hand): register again,
  // or the manager would never list us (or, if we manage, freeze the configuration).
  absl::StatusOr<bool> registered =
      client_->Exists(absl::StrCat(root_, "/members/", options_.self.id), /*watch=*/true);
  if (registered.ok() && !*registered) {
    SetError(absl::DataLossError("this node's registration vanished; registering again"));
    if (absl::Status s = Register(); !s.ok()) SetError(s);
  }
  if (absl::Status s = ReadConfig(); !s.ok()) SetError(s);
  absl::StatusOr<bool> manager = IsManager();
  if (!manager.ok()) {
    SetError(manager.status());
    return;
  }
  if (*manager && !config_pending_) {
    if (absl::Status s = Reconcile(); !s.ok()) SetError(s);
  }
}

absl::Status ZkMembership::ReadConfig() {
  config_pending_ = false;  // until a newer configuration waits for its markers
  const std::string path = absl::StrCat(root_, "/config");
  absl::StatusOr<ZkNodeData> node = client_->Get(path, /*watch=*/true);
  if (absl::IsNotFound(node.status())) {
    config_version_ = -1;
    config_valid_ = false;
    absl::StatusOr<bool> exists = client_->Exists(path, /*watch=*/true);  // wait for it
    if (!exists.ok()) return exists.status();
    if (*exists) return ReadConfig();
    return absl::OkStatus();
  }
  if (!node.ok()) return node.status();
  config_version_ = node->version;
  config_valid_ = false;
  absl::StatusOr<Configuration> decoded = DecodeConfiguration(node->data);
  if (!decoded.ok()) {
    return absl::Status(decoded.status().code(),
                        absl::StrCat("rejected the configuration in ZooKeeper (version ",
                                     node->version, "): ", decoded.status().message()));
  }
  if (decoded->cluster != options_.cluster) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "rejected a configuration of cluster '%s' (this node is in '%s')", decoded->cluster,
        options_.cluster));
  }
  std::shared_ptr<const Configuration> previous = current();
  if (previous != nullptr && decoded->epoch <= previous->epoch) {
    if (decoded->epoch < previous->epoch) {
      // Not valid as a base for the next epoch: the manager overwrites it.
      return absl::DataLossError(absl::StrFormat(
          "ZooKeeper holds epoch %d, older than the applied %d", decoded->epoch, previous->epoch));
    }
    config_valid_ = true;
    return absl::OkStatus();  // already applied
  }
  config_valid_ = true;
  auto config = std::make_shared<const Configuration>(std::move(*decoded));
  const Member* me = config->Find(options_.self.id);
  config_pending_ = true;
  if (me != nullptr && me->incarnation == options_.self.incarnation && options_.holds_data && !removal_checked_) {
    // Listed for the first time: a survivor that ran on without this node marked it
    // before this configuration was published (zk_membership.h).
    if (absl::Status s = CheckNotRemoved(); !s.ok()) {
      if (absl::IsFailedPrecondition(s)) {
        MutexLock lock(&mu_);
        refused_ = s;
        cv_.SignalAll();
      }
      return s;
    }
    removal_checked_ = true;
  }
  const bool fails_over = !options_.failover_active || options_.failover_active();
  if (fails_over) {
    absl::Status marked = MarkDeparted(*config, node->version);
    if (absl::IsFailedPrecondition(marked)) return ReadConfig();  // a newer one was published
    if (!marked.ok()) return marked;  // applied at the next refresh
  }
  config_pending_ = false;
  NoteMembers(*config);
  gate_.Apply(*config);  // a member only with our current session; lifts a fence then
  {
    MutexLock lock(&mu_);
    config_ = config;
    cv_.SignalAll();
  }
  Log(absl::StrCat("applied ", config->Summary(), me != nullptr ? "" : " (without this node)"));
  if (on_config_) on_config_(config);
  return absl::OkStatus();
}

absl::StatusOr<bool> ZkMembership::IsManager() {
  absl::StatusOr<std::vector<std::string>> candidates =
      client_->GetChildren(absl::StrCat(root_, "/election"), /*watch=*/true);
  if (!candidates.ok()) return candidates.status();
  // Sequence suffixes are zero-padded, so the lowest name is the oldest candidate.
  const auto lowest = std::min_element(candidates->begin(), candidates->end());
  const bool manager = lowest != candidates->end() &&
                       absl::StrCat(root_, "/election/", *lowest) == election_node_;
  MutexLock lock(&mu_);
  if (manager && !manager_) Log("became the configuration manager");
  manager_ = manager;
  return manager;
}

absl::Status ZkMembership::Reconcile() {
  const std::string members_dir = absl::StrCat(root_, "/members");
  absl::StatusOr<std::vector<std::string>> names = client_->GetChildren(members_dir, true);
  if (!names.ok()) return names.status();
  std::vector<Member> members;
  for (const std::string& name : *names) {
    absl::StatusOr<ZkNodeData> node = client_->Get(absl::StrCat(members_dir, "/", name), false);
    if (absl::IsNotFound(node.status())) continue;  // left meanwhile; a watch fires
    if (!node.ok()) return node.status();
    absl::StatusOr<Member> m = DecodeRegistration(node->data, options_.cluster);
    NodeId id = 0;
    if (!m.ok() || !absl::SimpleAtoi(name, &id) || id != m->id) {
      SetError(absl::InvalidArgumentError(absl::StrCat(
          "ignoring registration '", name, "': ",
          m.ok() ? "name does not match its node id" : m.status().message())));
      continue;
    }
    members.push_back(std::move(*m));
  }
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });

  std::shared_ptr<const Configuration> applied = current();
  if (applied == nullptr && config_version_ >= 0 && !config_valid_) {
    // The znode is unreadable and this manager knows no epoch: publishing would restart
    // epochs (and placement parameters) from scratch under nodes that applied more.
    return absl::FailedPreconditionError(absl::StrCat(
        "the configuration in ", root_, "/config is unreadable and this manager has applied "
        "none: not overwriting it (repair or delete it)"));
  }
  Configuration next;
  next.cluster = options_.cluster;
  next.manager = options_.self.id;
  next.members = std::move(members);
  next.replication = applied ? applied->replication : options_.replication;
  next.virtual_rings = applied ? applied->virtual_rings : options_.virtual_rings;
  next.epoch = applied ? applied->epoch + 1 : 1;
  // Up to date: the znode holds the applied configuration with these members and us.
  if (applied != nullptr && config_version_ >= 0 && config_valid_ &&
      applied->manager == next.manager &&
      SameMembers(applied->members, next.members)) {
    return absl::OkStatus();
  }
  if (next.members.empty() || !next.Contains(next.manager)) return absl::OkStatus();  // not yet
  absl::StatusOr<std::string> data = EncodeConfiguration(next);
  if (!data.ok()) return data.status();
  const std::string config_path = absl::StrCat(root_, "/config");
  ZkOp check{ZkOp::Kind::kCheck, election_node_, "", -1};  // still a candidate: fenced if not
  absl::StatusOr<bool> exists = client_->Exists(config_path, false);
  if (!exists.ok()) return exists.status();
  ZkOp write = *exists ? ZkOp{ZkOp::Kind::kSet, config_path, *data, config_version_}
                       : ZkOp{ZkOp::Kind::kCreate, config_path, *data, -1};
  if (*exists && config_version_ < 0) return absl::OkStatus();  // read it first; a watch fires
  absl::Status s = client_->Multi({check, write});
  if (absl::IsFailedPrecondition(s) || absl::IsAlreadyExists(s) || absl::IsNotFound(s)) {
    return absl::OkStatus();  // lost a race with another publisher: the watch brings it
  }
  if (s.ok()) Log(absl::StrCat("published ", next.Summary()));
  return s;
}

}  // namespace farm::membership
