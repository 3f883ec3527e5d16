#include "farm/msg/messenger.h"

#include <sodium.h>

#include <cstdio>

#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/msg/session.pb.h"

namespace farm {
namespace {

msg::Capability ToProto(const RegionCapability& cap) {
  msg::Capability p;
  p.set_region(cap.region);
  p.set_length(cap.length);
  p.set_rkey(cap.rkey);
  p.set_remote_base(cap.remote_base);
  return p;
}

RegionCapability FromProto(const msg::Capability& p) {
  RegionCapability cap;
  cap.region = p.region();
  cap.length = p.length();
  cap.rkey = p.rkey();
  cap.remote_base = p.remote_base();
  return cap;
}

uint64_t RandomSession() {
  uint64_t v = 0;
  while (v == 0) randombytes_buf(&v, sizeof(v));
  return v;
}

}  // namespace

std::string OneSidedHello(NodeId from) {
  msg::SessionHello hello;
  hello.set_version(kSessionVersion);
  hello.set_node_id(from);
  hello.set_one_sided_only(true);
  return hello.SerializeAsString();
}

absl::StatusOr<std::unique_ptr<Messenger>> Messenger::Create(Fabric* fabric,
                                                             std::vector<EventLoop*> loops,
                                                             const MessengerOptions& options) {
  if (loops.empty() || loops.size() >= kAnyThread) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a messenger needs 1..%u worker loops, got %u", kAnyThread - 1, loops.size()));
  }
  if (sodium_init() < 0) return absl::InternalError("libsodium failed to initialise");
  std::unique_ptr<Messenger> m(new Messenger(fabric, std::move(loops), options));
  absl::StatusOr<std::unique_ptr<MsgBuffers>> buffers =
      MsgBuffers::Create(fabric, options.buffer_region, options.ring_bytes, options.max_rings);
  if (!buffers.ok()) return buffers.status();
  m->buffers_ = std::move(*buffers);
  for (size_t i = 0; i < m->loops_.size(); ++i) {
    absl::StatusOr<std::unique_ptr<CompletionQueue>> cq = fabric->CreateCompletionQueue();
    if (!cq.ok()) return cq.status();
    m->threads_.push_back(std::make_unique<MsgThread>(m.get(), static_cast<uint16_t>(i),
                                                      m->loops_[i], std::move(*cq)));
  }
  return m;
}

Messenger::Messenger(Fabric* fabric, std::vector<EventLoop*> loops, const MessengerOptions& options)
    : fabric_(fabric),
      loops_(std::move(loops)),
      options_(options),
      session_(RandomSession()),
      guard_(std::make_shared<Guard>()) {
  MutexLock lock(&guard_->mu);
  guard_->owner = this;
}

Messenger::~Messenger() {
  {
    MutexLock lock(&guard_->mu);  // fabric callbacks stop reaching us
    guard_->owner = nullptr;
  }
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    connect_back_cv_.SignalAll();
    links_cv_.SignalAll();
  }
  if (connector_.joinable()) connector_.join();
  // Two phases: first every thread stops polling (so none hands a message to another),
  // then each is destroyed on its own loop, after any hand-over already queued there.
  auto on_each_loop = [this](auto&& fn) {
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (loops_[i]->running()) {
        RunInLoop(*loops_[i], [&] { fn(i); });
      } else {
        fn(i);
      }
    }
  };
  if (started_) {
    on_each_loop([this](size_t i) {
      loops_[i]->RemovePoller(threads_[i].get());
      loops_[i]->UnwatchFd(threads_[i]->cq()->wait_fd());
    });
  }
  on_each_loop([this](size_t i) { threads_[i].reset(); });
}

absl::Status Messenger::RegisterHandler(MsgId id, MessageHandler handler, absl::string_view registrant) {
  if (started_) return absl::FailedPreconditionError("handlers must be registered before Start");
  if (!handler) return absl::InvalidArgumentError("empty handler");
  if (id >= kFirstReservedMsgId) {
    return absl::InvalidArgumentError(
        absl::StrFormat("message id 0x%04x is reserved for the messaging layer", id));
  }
  if (auto [it, added] = registrants_.emplace(id, registrant); !added) {
    return DuplicateHandlerError(id, it->second, registrant);
  }
  handlers_.emplace(id, std::move(handler));
  return absl::OkStatus();
}

const MessageHandler* Messenger::handler(MsgId id) const {
  auto it = handlers_.find(id);
  return it == handlers_.end() ? nullptr : &it->second;
}

absl::Status Messenger::Start() {
  if (started_) return absl::FailedPreconditionError("already started");
  started_ = true;
  for (size_t i = 0; i < threads_.size(); ++i) {
    absl::Status status;
    RunInLoop(*loops_[i], [&] {
      loops_[i]->AddPoller(threads_[i].get());
      status = loops_[i]->WatchFd(threads_[i]->cq()->wait_fd());
    });
    if (!status.ok()) return status;
  }
  connector_ = std::thread([this] { ConnectBackLoop(); });
  return fabric_->Listen([guard = guard_](absl::string_view hello) -> absl::StatusOr<AcceptResult> {
    MutexLock lock(&guard->mu);
    if (guard->owner == nullptr) return absl::UnavailableError("node is shutting down");
    return guard->owner->Accept(hello);
  });
}

absl::StatusOr<AcceptResult> Messenger::Accept(absl::string_view hello_bytes) {
  msg::SessionHello hello;
  if (!hello.ParseFromArray(hello_bytes.data(), static_cast<int>(hello_bytes.size()))) {
    return absl::InvalidArgumentError("malformed messaging session hello");
  }
  if (hello.version() != kSessionVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "peer speaks messaging protocol v%u, this node v%u", hello.version(), kSessionVersion));
  }
  const NodeId node = hello.node_id();
  if (node == options_.node_id) {
    return absl::AlreadyExistsError(absl::StrFormat(
        "duplicate node id: the connecting node claims id %u, which is this node's", node));
  }
  if (hello.one_sided_only()) {
    msg::SessionAccept accept;
    accept.set_version(kSessionVersion);
    accept.set_node_id(options_.node_id);
    accept.set_session(session_);
    accept.set_thread_count(static_cast<uint32_t>(threads_.size()));
    return AcceptResult{accept.SerializeAsString(), nullptr};
  }
  if (hello.ring_bytes() != options_.ring_bytes) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "ring size mismatch: peer uses %u bytes, this node %u", hello.ring_bytes(),
        options_.ring_bytes));
  }
  if (hello.thread() >= kAnyThread || hello.session() == 0) {
    return absl::InvalidArgumentError("session hello names an impossible thread or session");
  }
  absl::StatusOr<uint64_t> ring = buffers_->Allocate(MsgBuffers::Kind::kRing);
  if (!ring.ok()) return ring.status();
  absl::StatusOr<uint64_t> word = buffers_->Allocate(MsgBuffers::Kind::kWord);
  if (!word.ok()) {
    buffers_->Free(MsgBuffers::Kind::kRing, *ring);
    return word.status();
  }
  const auto receiver = static_cast<uint16_t>(hello.thread() % threads_.size());
  MsgThread::InboundSpec spec;
  spec.node = node;
  spec.thread = static_cast<uint16_t>(hello.thread());
  spec.session = hello.session();
  spec.receiver.ring = buffers_->at(*ring);
  spec.receiver.ring_bytes = options_.ring_bytes;
  spec.receiver.head_region = FromProto(hello.head_region());
  spec.receiver.head_offset = hello.head_offset();
  spec.receiver.sender_doorbell = hello.doorbell();
  spec.receiver.head_source = buffers_->at(*word);
  spec.receiver.head_source_lkey = buffers_->lkey();
  spec.ring_offset = *ring;
  spec.head_source_offset = *word;
  MsgThread* thread = threads_[receiver].get();
  loops_[receiver]->Post([thread, spec] { thread->AddInbound(spec); });

  {
    MutexLock lock(&mu_);
    PeerLinks& peer = peers_[node];
    peer.locator = hello.locator();
    peer.thread_count = hello.thread_count();
    bool current = hello.session() == peer.known_session;
    for (size_t t = 0; current && t < threads_.size(); ++t) {
      current = t < peer.linked.size() && peer.linked[t] == peer.known_session;
    }
    if (!current) {
      peer.known_session = hello.session();
      QueueConnectBack(node, peer.locator);
    }
  }

  msg::SessionAccept accept;
  accept.set_version(kSessionVersion);
  accept.set_node_id(options_.node_id);
  accept.set_session(session_);
  accept.set_thread_count(static_cast<uint32_t>(threads_.size()));
  *accept.mutable_ring_region() = ToProto(buffers_->capability());
  accept.set_ring_offset(*ring);
  accept.set_ring_bytes(options_.ring_bytes);
  accept.set_receiver_thread(receiver);
  accept.set_doorbell(loops_[receiver]->doorbell_id());

  AcceptResult result;
  result.reply = accept.SerializeAsString();
  result.on_close = [guard = guard_, receiver, node, remote_thread = spec.thread,
                     session = hello.session()] {
    MutexLock lock(&guard->mu);
    Messenger* owner = guard->owner;
    if (owner == nullptr) return;
    owner->OnInboundClosed(node, remote_thread, session);
    MsgThread* t = owner->threads_[receiver].get();
    owner->loops_[receiver]->Post(
        [t, node, remote_thread, session] { t->RemoveInbound(node, remote_thread, session); });
  };
  return result;
}

absl::Status Messenger::Connect(NodeId peer, absl::string_view locator) {
  if (!started_) return absl::FailedPreconditionError("Start the messenger before connecting");
  if (peer == options_.node_id) {
    return absl::InvalidArgumentError("a node does not connect to itself");
  }
  {
    MutexLock serial(&connect_mu_);
    for (size_t t = 0; t < threads_.size(); ++t) {
      {
        MutexLock lock(&mu_);
        PeerLinks& links = peers_[peer];
        links.linked.resize(threads_.size(), 0);
        if (links.linked[t] != 0 && links.linked[t] == links.known_session) continue;
      }
      if (absl::Status s = ConnectThread(peer, locator, static_cast<uint16_t>(t)); !s.ok()) {
        return s;
      }
    }
  }
  // The other direction: the peer connects back on its own (its accept handler queues
  // it); wait for its rings here, outside connect_mu_ so that our own connect-backs run.
  MutexLock lock(&mu_);
  const bool both = links_cv_.WaitFor(&mu_, options_.link_timeout,
                                      [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                        return stopping_ || BothWays(peers_[peer]);
                                      });
  if (!both) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "node %u at %s accepted our rings but did not connect back within %s", peer, locator,
        absl::FormatDuration(options_.link_timeout)));
  }
  return absl::OkStatus();
}

bool Messenger::BothWays(const PeerLinks& peer) const {
  if (peer.linked.size() != threads_.size() || peer.thread_count == 0) return false;
  for (uint64_t session : peer.linked) {
    if (session == 0 || session != peer.known_session) return false;
  }
  return peer.up_session == peer.known_session && peer.up_threads.size() >= peer.thread_count;
}

void Messenger::OnLinkUp(NodeId node, uint16_t thread, uint64_t session) {
  MutexLock lock(&mu_);
  PeerLinks& peer = peers_[node];
  if (peer.up_session != session) {
    peer.up_session = session;
    peer.up_threads.clear();
  }
  peer.up_threads.insert(thread);
  links_cv_.SignalAll();
}

void Messenger::OnInboundClosed(NodeId node, uint16_t thread, uint64_t session) {
  MutexLock lock(&mu_);
  auto it = peers_.find(node);
  if (it != peers_.end() && it->second.up_session == session) it->second.up_threads.erase(thread);
  links_cv_.SignalAll();
}

absl::Status Messenger::ConnectThread(NodeId peer, absl::string_view locator, uint16_t t) {
  absl::StatusOr<uint64_t> staging = buffers_->Allocate(MsgBuffers::Kind::kStaging);
  if (!staging.ok()) return staging.status();
  absl::StatusOr<uint64_t> word = buffers_->Allocate(MsgBuffers::Kind::kWord);
  if (!word.ok()) {
    buffers_->Free(MsgBuffers::Kind::kStaging, *staging);
    return word.status();
  }
  auto release = [&] {
    buffers_->Free(MsgBuffers::Kind::kStaging, *staging);
    buffers_->Free(MsgBuffers::Kind::kWord, *word);
  };

  msg::SessionHello hello;
  hello.set_version(kSessionVersion);
  hello.set_node_id(options_.node_id);
  hello.set_session(session_);
  hello.set_thread(t);
  hello.set_thread_count(static_cast<uint32_t>(threads_.size()));
  hello.set_locator(fabric_->locator());
  hello.set_ring_bytes(options_.ring_bytes);
  *hello.mutable_head_region() = ToProto(buffers_->capability());
  hello.set_head_offset(*word);
  hello.set_doorbell(loops_[t]->doorbell_id());
  absl::StatusOr<Connection> conn =
      fabric_->Connect(locator, hello.SerializeAsString(), threads_[t]->cq(), peer);
  if (!conn.ok()) {
    release();
    return conn.status();
  }
  msg::SessionAccept accept;
  absl::Status bad;
  if (!accept.ParseFromString(conn->reply)) {
    bad = absl::DataLossError("malformed messaging session accept");
  } else if (accept.version() != kSessionVersion) {
    bad = absl::FailedPreconditionError(absl::StrFormat(
        "peer speaks messaging protocol v%u, this node v%u", accept.version(), kSessionVersion));
  } else if (accept.node_id() != peer) {
    bad = absl::FailedPreconditionError(absl::StrFormat(
        "the node at %s is node %u, not node %u", locator, accept.node_id(), peer));
  } else if (accept.ring_bytes() != options_.ring_bytes ||
             accept.ring_offset() + accept.ring_bytes() > accept.ring_region().length()) {
    bad = absl::FailedPreconditionError("peer's ring does not fit its region or our ring size");
  }
  if (!bad.ok()) {
    conn->endpoint.reset();
    release();
    return bad;
  }

  MsgThread::LinkSpec spec;
  spec.node = peer;
  spec.session = accept.session();
  spec.endpoint = std::move(conn->endpoint);
  spec.sender.ring = FromProto(accept.ring_region());
  spec.sender.ring_offset = accept.ring_offset();
  spec.sender.ring_bytes = options_.ring_bytes;
  spec.sender.staging = buffers_->at(*staging);
  spec.sender.staging_lkey = buffers_->lkey();
  spec.sender.head_copy = buffers_->at(*word);
  spec.sender.receiver_doorbell = accept.doorbell();
  spec.sender.max_backlog_bytes = options_.max_backlog_bytes;
  spec.sender.trailer_apart = !fabric_->WritesLandInAddressOrder();
  spec.staging_offset = *staging;
  spec.head_word_offset = *word;
  {
    MutexLock lock(&mu_);
    PeerLinks& links = peers_[peer];
    links.locator = std::string(locator);
    links.known_session = accept.session();
    links.thread_count = accept.thread_count();
    links.linked.resize(threads_.size(), 0);
    links.linked[t] = accept.session();
    links_cv_.SignalAll();
  }
  MsgThread* thread = threads_[t].get();
  loops_[t]->Post([thread, spec = std::move(spec)]() mutable { thread->AddLink(std::move(spec)); });
  return absl::OkStatus();
}

bool Messenger::IsConnected(NodeId peer) const {
  MutexLock lock(&mu_);
  auto it = peers_.find(peer);
  return it != peers_.end() && BothWays(it->second);
}

void Messenger::DropPeer(NodeId node, const absl::Status& why) {
  for (auto& t : threads_) {
    MsgThread* thread = t.get();
    thread->loop().Post([thread, node, why] { thread->DropPeer(node, why); });
  }
}

void Messenger::OnLinkDown(NodeId node, uint16_t thread, uint64_t session) {
  MutexLock lock(&mu_);
  auto it = peers_.find(node);
  if (it == peers_.end() || thread >= it->second.linked.size()) return;
  PeerLinks& peer = it->second;
  if (peer.linked[thread] == session) peer.linked[thread] = 0;
  links_cv_.SignalAll();
  // A newer instance of the peer has connected to us meanwhile: link to it.
  if (peer.known_session != session && !peer.locator.empty()) QueueConnectBack(node, peer.locator);
}

void Messenger::QueueConnectBack(NodeId node, const std::string& locator) {
  connect_back_.emplace_back(node, locator);
  connect_back_cv_.SignalAll();
}

void Messenger::ConnectBackLoop() {
  for (;;) {
    std::pair<NodeId, std::string> job;
    {
      MutexLock lock(&mu_);
      connect_back_cv_.Wait(&mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return stopping_ || !connect_back_.empty();
      });
      if (stopping_) return;
      job = std::move(connect_back_.front());
      connect_back_.pop_front();
    }
    if (absl::Status s = Connect(job.first, job.second); !s.ok()) {
      // The peer connected to us, so it is up; failing to connect back is news.
      FARM_LOG(kWarning, "node %u: connecting back to node %u at %s: %s", options_.node_id, job.first, job.second,
               s.ToString());
    }
  }
}

}  // namespace farm
