#include "farm/msg/msg_thread.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/msg/messenger.h"

namespace farm {
namespace {

// Completion tags: the high 32 bits of a wr_id say what was written, the low 32 bits
// name the peer. A disconnect's wr_id is the endpoint context: the peer alone.
constexpr uint64_t kTagRecord = uint64_t{1} << 32;
constexpr uint64_t kTagHead = uint64_t{2} << 32;
// One-sided ops of the layers above: the low 32 bits are a sequence number instead.
constexpr uint64_t kTagOneSided = uint64_t{3} << 32;
NodeId PeerOf(uint64_t wr_id) { return static_cast<NodeId>(wr_id); }

constexpr int kReceiveBudget = 64;  // records per ring per poll
constexpr auto kExpiryInterval = std::chrono::milliseconds(1);

}  // namespace

struct MsgThread::Inbound final : public RecordSink {
  Inbound(MsgThread* thread, const InboundSpec& spec)
      : thread(thread),
        node(spec.node),
        remote_thread(spec.thread),
        session(spec.session),
        ring_offset(spec.ring_offset),
        head_source_offset(spec.head_source_offset),
        receiver(spec.receiver) {}
  void OnRecord(const ring::Header& header, absl::string_view payload) override {
    if (header.handler == kLinkUpMsgId && header.flags == 0) {
      thread->messenger_->OnLinkUp(node, header.src_thread, session);
      return;
    }
    thread->OnRecord(node, header, payload);
  }
  MsgThread* thread;
  NodeId node;
  uint16_t remote_thread;
  uint64_t session;
  uint64_t ring_offset;
  uint64_t head_source_offset;
  RingReceiver receiver;
  bool reported = false;
};

MsgThread::MsgThread(Messenger* messenger, uint16_t index, EventLoop* loop,
                     std::unique_ptr<CompletionQueue> cq)
    : messenger_(messenger), index_(index), loop_(loop), cq_(std::move(cq)) {}

MsgThread::~MsgThread() {
  for (auto& [node, link] : links_) ReleaseLink(link);
  for (auto& in : inbound_) {
    messenger_->buffers().Free(MsgBuffers::Kind::kRing, in->ring_offset);
    messenger_->buffers().Free(MsgBuffers::Kind::kWord, in->head_source_offset);
  }
}

size_t MsgThread::max_payload_bytes() const {
  return ring::MaxRecordBytes(messenger_->buffers().ring_bytes()) - ring::kOverheadBytes;
}

bool MsgThread::IsLinked(NodeId node) const {
  return node == messenger_->node_id() || links_.contains(node);
}

void MsgThread::ReleaseLink(Link& link) {
  link.sender.reset();
  link.endpoint.reset();
  messenger_->buffers().Free(MsgBuffers::Kind::kStaging, link.staging_offset);
  messenger_->buffers().Free(MsgBuffers::Kind::kWord, link.head_word_offset);
}

void MsgThread::AddLink(LinkSpec spec) {
  if (links_.contains(spec.node)) {
    FailPeer(spec.node, absl::UnavailableError("replaced by a new session"));
  }
  Link& link = links_[spec.node];
  link.session = spec.session;
  link.endpoint = std::move(spec.endpoint);
  spec.sender.endpoint = link.endpoint.get();
  spec.sender.wr_id = kTagRecord | spec.node;
  link.sender = std::make_unique<RingSender>(spec.sender);
  link.staging_offset = spec.staging_offset;
  link.head_word_offset = spec.head_word_offset;
  // Announce the link over itself: its arrival tells the peer we can answer it.
  ring::Header h;
  h.handler = kLinkUpMsgId;
  h.src_thread = index_;
  (void)SendRecord(spec.node, h, {});
}

void MsgThread::AddInbound(const InboundSpec& spec) {
  InboundSpec s = spec;
  s.receiver.wr_id = kTagHead | spec.node;
  inbound_.push_back(std::make_unique<Inbound>(this, s));
}

void MsgThread::RemoveInbound(NodeId node, uint16_t thread, uint64_t session) {
  auto it = std::find_if(inbound_.begin(), inbound_.end(), [&](const auto& in) {
    return in->node == node && in->remote_thread == thread && in->session == session;
  });
  if (it == inbound_.end()) return;
  messenger_->buffers().Free(MsgBuffers::Kind::kRing, (*it)->ring_offset);
  messenger_->buffers().Free(MsgBuffers::Kind::kWord, (*it)->head_source_offset);
  inbound_.erase(it);
}

absl::Status MsgThread::SendRecord(NodeId node, const ring::Header& header,
                                   absl::string_view payload) {
  const CopyOf copy{payload};
  return SendRecord(node, header, PayloadBuilder{payload.size(), copy});
}

absl::Status MsgThread::SendRecord(NodeId node, const ring::Header& header,
                                   const PayloadBuilder& payload) {
  if (payload.bytes > max_payload_bytes()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "message of %u bytes exceeds the limit of %u (a quarter of the %u-byte ring)",
        payload.bytes, max_payload_bytes(), messenger_->buffers().ring_bytes()));
  }
  if (node == messenger_->node_id()) {
    const uint16_t target = header.dst_thread == kAnyThread ? index_ : header.dst_thread;
    if (target >= messenger_->thread_count()) {
      return absl::InvalidArgumentError(absl::StrFormat("no thread %u on this node", target));
    }
    HandOver(target, header, node, payload);
    ++stats_.sent;
    return absl::OkStatus();
  }
  auto it = links_.find(node);
  if (it == links_.end()) {
    return absl::UnavailableError(absl::StrFormat("no connection to node %u", node));
  }
  absl::Status status = it->second.sender->Send(header, payload);
  if (absl::IsUnavailable(status)) FailPeer(node, status);
  if (status.ok()) {
    ++stats_.sent;
    sent_since_notify_ = true;
  }
  return status;
}

absl::Status MsgThread::Send(NodeId node, MsgId id, absl::string_view payload,
                             uint16_t dst_thread) {
  ring::Header h;
  h.handler = id;
  h.src_thread = index_;
  h.dst_thread = dst_thread;
  return SendRecord(node, h, payload);
}

absl::Status MsgThread::Call(NodeId node, MsgId id, absl::string_view payload,
                             ResponseHandler done, absl::Duration timeout, uint16_t dst_thread) {
  const CopyOf copy{payload};
  return Call(node, id, PayloadBuilder{payload.size(), copy}, std::move(done), timeout, dst_thread);
}

absl::Status MsgThread::Call(NodeId node, MsgId id, const PayloadBuilder& payload,
                             ResponseHandler done, absl::Duration timeout, uint16_t dst_thread) {
  if (timeout == absl::ZeroDuration()) timeout = messenger_->options().default_rpc_timeout;
  const uint64_t rpc_id = next_rpc_id_++;
  ring::Header h;
  h.handler = id;
  h.src_thread = index_;
  h.dst_thread = dst_thread;
  h.flags = ring::kFlagRequest;
  h.rpc_id = rpc_id;
  if (absl::Status s = SendRecord(node, h, payload); !s.ok()) return s;
  PendingCall call{std::move(done), node, EventLoop::Clock::time_point::max()};
  if (timeout != absl::InfiniteDuration()) {
    // The loop's time of this iteration: no clock read per call; a deadline is early by
    // at most one iteration, which a timeout of milliseconds or more does not notice.
    call.deadline = loop_->now() +
                    std::chrono::duration_cast<EventLoop::Clock::duration>(
                        absl::ToChronoNanoseconds(timeout));
  }
  earliest_deadline_ = std::min(earliest_deadline_, call.deadline);
  pending_.emplace(rpc_id, std::move(call));
  return absl::OkStatus();
}

absl::Status MsgThread::Reply(const ReplyTo& to, absl::string_view payload) {
  if (to.rpc_id == 0) return absl::FailedPreconditionError("the message was one-way");
  ring::Header h;
  h.src_thread = index_;
  h.dst_thread = to.thread;
  h.flags = ring::kFlagResponse;
  h.rpc_id = to.rpc_id;
  return SendRecord(to.node, h, payload);
}

absl::Status MsgThread::ReplyError(const ReplyTo& to, const absl::Status& error) {
  if (to.rpc_id == 0) return absl::FailedPreconditionError("the message was one-way");
  ring::Header h;
  h.src_thread = index_;
  h.dst_thread = to.thread;
  h.flags = ring::kFlagResponse | ring::kFlagError;
  h.status = static_cast<uint16_t>(error.ok() ? absl::StatusCode::kUnknown : error.code());
  h.rpc_id = to.rpc_id;
  const absl::string_view text = error.message();
  return SendRecord(to.node, h,
                    text.substr(0, max_payload_bytes()));
}

void MsgThread::HandOver(uint16_t thread, const ring::Header& header, NodeId from,
                         const PayloadBuilder& payload) {
  MsgThread& target = messenger_->thread(thread);
  Envelope envelope{header, from, std::string(payload.bytes, '\0')};
  payload.write(envelope.payload.data());
  target.loop().Post([&target, e = std::move(envelope)] { target.DeliverHandedOver(e); });
}

void MsgThread::DeliverHandedOver(const Envelope& e) {
  OnRecord(e.from, e.header, e.payload);
}

void MsgThread::OnRecord(NodeId from, const ring::Header& header, absl::string_view payload) {
  ++stats_.received;
  if (header.flags & ring::kFlagResponse) {
    if (header.dst_thread != index_) {
      if (header.dst_thread >= messenger_->thread_count()) return;  // nobody to deliver to
      ++stats_.forwarded;
      HandOver(header.dst_thread, header, from, payload);
      return;
    }
    if (header.flags & ring::kFlagError) {
      const auto code = header.status <= static_cast<uint16_t>(absl::StatusCode::kUnauthenticated)
                            ? static_cast<absl::StatusCode>(header.status)
                            : absl::StatusCode::kUnknown;
      absl::Status answered(code, payload);
      answered.SetPayload(kRemoteErrorPayloadUrl, absl::Cord("1"));
      CompleteCall(header.rpc_id, answered, {});
    } else {
      CompleteCall(header.rpc_id, absl::OkStatus(), payload);
    }
    return;
  }
  Message m;
  m.from = from;
  m.from_thread = header.src_thread;
  m.id = header.handler;
  m.payload = payload;
  if (header.flags & ring::kFlagRequest) m.reply_to = ReplyTo{from, header.src_thread, header.rpc_id};
  Dispatch(m, header.dst_thread);
}

void MsgThread::Dispatch(const Message& m, uint16_t dst_thread) {
  if (dst_thread != kAnyThread && dst_thread != index_) {
    if (dst_thread < messenger_->thread_count()) {
      ++stats_.forwarded;
      ring::Header h;
      h.handler = m.id;
      h.src_thread = m.from_thread;
      h.dst_thread = dst_thread;
      h.flags = m.expects_reply() ? ring::kFlagRequest : 0;
      h.rpc_id = m.reply_to.rpc_id;
      HandOver(dst_thread, h, m.from, m.payload);
    } else if (m.expects_reply()) {
      (void)ReplyError(m.reply_to, absl::InvalidArgumentError(absl::StrFormat(
                                       "node %u has no thread %u", messenger_->node_id(), dst_thread)));
    }
    return;
  }
  const MessageHandler* handler = messenger_->handler(m.id);
  if (handler == nullptr) {
    if (m.expects_reply()) {
      (void)ReplyError(m.reply_to, absl::UnimplementedError(absl::StrFormat(
                                       "node %u has no handler for message id %u",
                                       messenger_->node_id(), m.id)));
    } else {
      ++stats_.unhandled;
    }
    return;
  }
  (*handler)(*this, m);
}

void MsgThread::CompleteCall(uint64_t rpc_id, const absl::Status& status,
                             absl::string_view payload) {
  auto it = pending_.find(rpc_id);
  if (it == pending_.end()) return;  // timed out or failed already
  ResponseHandler done = std::move(it->second.done);
  pending_.erase(it);
  if (!status.ok()) ++stats_.calls_failed;
  done(status, payload);
}

void MsgThread::FailPeer(NodeId node, const absl::Status& why) {
  auto it = links_.find(node);
  if (it != links_.end()) {
    const uint64_t session = it->second.session;
    one_sided_waiting_ -= it->second.one_sided_backlog.size();  // failed below
    ReleaseLink(it->second);
    links_.erase(it);
    messenger_->OnLinkDown(node, index_, session);
  }
  const absl::Status status = absl::UnavailableError(
      absl::StrFormat("node %u failed: %s", node, why.message()));
  std::vector<uint64_t> failed;
  for (const auto& [rpc_id, call] : pending_) {
    if (call.node == node) failed.push_back(rpc_id);
  }
  std::sort(failed.begin(), failed.end());  // in call order
  for (uint64_t rpc_id : failed) CompleteCall(rpc_id, status, {});
  // One-sided ops on the lost link: their completions may never come.
  std::vector<uint32_t> lost;
  for (const auto& [seq, op] : one_sided_) {
    if (op.node == node) lost.push_back(seq);
  }
  std::sort(lost.begin(), lost.end());
  for (uint32_t seq : lost) {
    Completion c;
    c.wr_id = kTagOneSided | seq;
    c.status = CompletionStatus::kTransportError;
    auto it = one_sided_.find(seq);
    if (it == one_sided_.end()) continue;  // a callback completed it meanwhile
    PendingOneSided op = std::move(it->second);
    one_sided_.erase(it);
    op.done(c);
  }
}

absl::Status MsgThread::PostOneSided(NodeId node, WorkRequest wr, OneSidedDone done) {
  auto it = links_.find(node);
  if (it == links_.end() || it->second.endpoint == nullptr) {
    return absl::UnavailableError(absl::StrFormat("no link to node %u", node));
  }
  Link& link = it->second;
  const uint32_t seq = next_one_sided_++;
  wr.wr_id = kTagOneSided | seq;
  wr.signaled = true;
  if (link.one_sided_backlog.empty()) {
    absl::Status s = link.endpoint->Post(wr);
    if (s.ok()) {
      one_sided_.emplace(seq, PendingOneSided{node, std::move(done)});
      return absl::OkStatus();
    }
    if (!absl::IsResourceExhausted(s)) return s;
  }
  // No room now (or ops before it still wait): posted by FlushOneSidedBacklogs.
  link.one_sided_backlog.push_back(
      BackloggedOneSided{wr, wr.remote != nullptr ? *wr.remote : RegionCapability{}});
  ++one_sided_backlogged_;
  ++one_sided_waiting_;
  one_sided_.emplace(seq, PendingOneSided{node, std::move(done)});
  return absl::OkStatus();
}

int MsgThread::FlushOneSidedBacklogs() {
  if (one_sided_waiting_ == 0) return 0;
  int posted = 0;
  std::vector<std::pair<NodeId, absl::Status>> broken;
  std::vector<std::pair<uint32_t, absl::Status>> malformed;  // queued behind others, unchecked
  for (auto& [node, link] : links_) {
    std::deque<BackloggedOneSided>& backlog = link.one_sided_backlog;
    while (!backlog.empty()) {
      BackloggedOneSided& next = backlog.front();
      if (next.wr.remote != nullptr) next.wr.remote = &next.remote;
      absl::Status s = link.endpoint->Post(next.wr);
      if (absl::IsResourceExhausted(s)) break;  // still no room: after more completions
      const uint32_t seq = static_cast<uint32_t>(next.wr.wr_id);
      backlog.pop_front();
      --one_sided_waiting_;
      if (s.ok()) {
        ++posted;
      } else if (absl::IsInvalidArgument(s)) {
        malformed.emplace_back(seq, std::move(s));
      } else {
        broken.emplace_back(node, std::move(s));  // FailPeer completes this op and the rest
        break;
      }
    }
  }
  // Continuations run after the walk over links_ (they may post again).
  for (const auto& [seq, why] : malformed) {
    auto it = one_sided_.find(seq);
    if (it == one_sided_.end()) continue;
    FARM_LOG(kWarning, "node %u thread %u: one-sided op to node %u refused by the endpoint: %s",
             messenger_->node_id(), index_, it->second.node, why.message());
    PendingOneSided op = std::move(it->second);
    one_sided_.erase(it);
    Completion c;
    c.wr_id = kTagOneSided | seq;
    c.status = CompletionStatus::kRemoteInvalidRequest;
    op.done(c);
  }
  for (const auto& [node, why] : broken) FailPeer(node, why);
  return posted;
}

void MsgThread::CompleteOneSided(const Completion& c) {
  auto it = one_sided_.find(static_cast<uint32_t>(c.wr_id));
  if (it == one_sided_.end()) return;  // completed already, when its link failed
  PendingOneSided op = std::move(it->second);
  one_sided_.erase(it);
  op.done(c);
  if (c.status == CompletionStatus::kTransportError) {
    FailPeer(op.node, absl::UnavailableError("one-sided op failed: connection lost"));
  }
}

int MsgThread::HandleCompletions() {
  Completion batch[32];
  const int n = cq_->Poll(absl::MakeSpan(batch));
  for (int i = 0; i < n; ++i) {
    const Completion& c = batch[i];
    if (c.opcode != Opcode::kDisconnect && (c.wr_id >> 32) == (kTagOneSided >> 32)) {
      CompleteOneSided(c);
    } else if (c.opcode == Opcode::kDisconnect) {
      FailPeer(PeerOf(c.wr_id), absl::UnavailableError("connection lost"));
    } else if (c.status != CompletionStatus::kSuccess) {
      FailPeer(PeerOf(c.wr_id),
               absl::UnavailableError(absl::StrCat("ring write failed: ",
                                                   CompletionStatusName(c.status))));
    }
  }
  return n;
}

void MsgThread::ExpireCalls() {
  const auto now = loop_->now();
  if (pending_.empty()) {
    earliest_deadline_ = EventLoop::Clock::time_point::max();
    return;
  }
  if (now < next_expiry_check_ && now < earliest_deadline_) return;
  next_expiry_check_ = now + kExpiryInterval;
  std::vector<uint64_t> expired;
  auto earliest = EventLoop::Clock::time_point::max();
  for (const auto& [rpc_id, call] : pending_) {
    if (call.deadline <= now) {
      expired.push_back(rpc_id);
    } else {
      earliest = std::min(earliest, call.deadline);
    }
  }
  earliest_deadline_ = earliest;
  std::sort(expired.begin(), expired.end());
  for (uint64_t rpc_id : expired) {
    CompleteCall(rpc_id, absl::DeadlineExceededError("no response before the RPC deadline"), {});
  }
}

void MsgThread::NotifyPeers() {
  if (!sent_since_notify_) return;
  sent_since_notify_ = false;
  std::vector<std::pair<NodeId, absl::Status>> broken;
  for (auto& [node, link] : links_) {
    if (absl::Status s = link.sender->Notify(); !s.ok()) {
      broken.emplace_back(node, s);
    } else if (link.sender->notify_pending()) {
      sent_since_notify_ = true;  // could not post now: try again next poll
    }
  }
  for (const auto& [node, why] : broken) FailPeer(node, why);
}

int MsgThread::Poll() {
  NotifyPeers();  // what was sent since the last poll (work items, timers)
  // Completions are events: their continuations make progress, and a full batch may
  // leave more in the queue for the next poll.
  int events = HandleCompletions();
  events += FlushOneSidedBacklogs();  // the completions made room
  for (size_t i = 0; i < inbound_.size(); ++i) {
    Inbound& in = *inbound_[i];
    events += in.receiver.Poll(kReceiveBudget, in);
    auto link = links_.find(in.node);  // after Poll: a handler may have failed the link
    in.receiver.MaybeReturnSpace(link == links_.end() ? nullptr : link->second.endpoint.get());
    if (!in.receiver.status().ok() && !in.reported) {
      in.reported = true;
      FARM_LOG(kWarning, "node %u thread %u: ring from node %u thread %u abandoned: %s", messenger_->node_id(),
               index_, in.node, in.remote_thread, in.receiver.status().message());
    }
  }
  std::vector<std::pair<NodeId, absl::Status>> broken;
  for (auto& [node, link] : links_) {
    if (!link.sender->has_backlog()) continue;
    absl::StatusOr<int> flushed = link.sender->Flush();
    if (flushed.ok()) {
      events += *flushed;
      if (*flushed > 0) sent_since_notify_ = true;
    } else {
      broken.emplace_back(node, flushed.status());
    }
  }
  for (const auto& [node, why] : broken) FailPeer(node, why);
  ExpireCalls();
  NotifyPeers();  // what handlers and continuations sent during this poll
  return events;
}

}  // namespace farm
