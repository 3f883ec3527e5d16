// MsgThread: the messaging state of one worker thread, polled by its event loop.
//
// It owns the thread's completion queue, one outgoing link per peer node (an endpoint
// and the RingSender of this thread's ring on that node), the incoming rings assigned
// to this thread, and the thread's pending RPCs. Rings are per (sending thread,
// receiving node), as in the paper; the receiving node assigns the ring from remote
// thread t to its thread t mod (its thread count). With equal thread counts, requests
// from thread t are handled by thread t and responses come back to thread t.
//
// Continuations run on the thread that made the call (paper section 3.2). A message or
// response that arrives on another thread than the one it is addressed to is copied
// and handed over through the event loop.
//
// Owning thread only; the Messenger sets links and rings up by posting to the loop.
#ifndef FARM_MSG_MSG_THREAD_H_
#define FARM_MSG_MSG_THREAD_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "absl/strings/string_view.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/message.h"
#include "farm/msg/ring_receiver.h"
#include "farm/msg/ring_sender.h"

namespace farm {

class Messenger;

struct MsgThreadStats {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t forwarded = 0;  // arrived on this thread for another one
  uint64_t unhandled = 0;  // one-way messages with no handler
  uint64_t calls_failed = 0;
};

class MsgThread final : public Poller {
 public:
  MsgThread(Messenger* messenger, uint16_t index, EventLoop* loop,
            std::unique_ptr<CompletionQueue> cq);
  ~MsgThread() override;

  // Sends a one-way message (msgSend). `dst_thread` picks the receiving thread, or
  // kAnyThread for the one polling the ring. Errors: Unavailable (no working link to
  // `node`), InvalidArgument (payload over max_payload_bytes), ResourceExhausted (the
  // ring and its backlog are full).
  absl::Status Send(NodeId node, MsgId id, absl::string_view payload,
                    uint16_t dst_thread = kAnyThread);

  // Sends a request; `done` runs on this thread with the response or an error, exactly
  // once, unless Call itself returns an error (then never). `timeout` defaults to the
  // messenger's; absl::InfiniteDuration() waits as long as the peer lives.
  absl::Status Call(NodeId node, MsgId id, absl::string_view payload, ResponseHandler done,
                    absl::Duration timeout = absl::ZeroDuration(),
                    uint16_t dst_thread = kAnyThread);
  // The same, with the request built in place (PayloadBuilder, message.h): no copy of
  // the payload before it is in the ring. payload.write runs at most once, inside Call.
  absl::Status Call(NodeId node, MsgId id, const PayloadBuilder& payload, ResponseHandler done,
                    absl::Duration timeout = absl::ZeroDuration(),
                    uint16_t dst_thread = kAnyThread);

  // Posts a one-sided op (READ, WRITE, COMPARE_SWAP, FETCH_ADD) to `node` over this
  // thread's link to it; wr_id and signaled are set here, the rest is the caller's (the
  // local buffer must be registered with the node's fabric and stay untouched until
  // `done`). `done` runs on this thread with the op's completion, exactly once, unless
  // PostOneSided itself fails (then never): on success, on a remote error (the op did
  // not execute), or with kTransportError when the link fails meanwhile. Errors:
  // Unavailable (no link to `node`), and the endpoint's post errors but ResourceExhausted:
  // an op the endpoint has no room for (its send queue or this thread's completion queue
  // is full, say behind a burst of ring writes) waits in the link's backlog and is posted,
  // in order, as completions make room. Ops to one node are posted in call order.
  absl::Status PostOneSided(NodeId node, WorkRequest wr, OneSidedDone done);
  size_t pending_one_sided() const { return one_sided_.size(); }  // backlog included
  uint64_t one_sided_backlogged() const { return one_sided_backlogged_; }  // ever waited

  // Gives up on `node` now (it left the cluster's configuration): closes this thread's
  // link to it and fails its pending calls (Unavailable) and one-sided ops, instead of
  // waiting for their deadlines. A later Connect links to it again.
  void DropPeer(NodeId node, const absl::Status& why) { FailPeer(node, why); }

  // Answers a request received on this thread (now or later).
  absl::Status Reply(const ReplyTo& to, absl::string_view payload);
  absl::Status ReplyError(const ReplyTo& to, const absl::Status& error);

  int Poll() override;
  TimePoint NextDeadline() const override { return earliest_deadline_; }
  void PrepareToPark() override { cq_->PrepareToWait(); }

  uint16_t index() const { return index_; }
  EventLoop& loop() const { return *loop_; }
  CompletionQueue* cq() const { return cq_.get(); }
  bool IsLinked(NodeId node) const;
  size_t pending_calls() const { return pending_.size(); }
  const MsgThreadStats& stats() const { return stats_; }
  // The largest payload a message may carry.
  size_t max_payload_bytes() const;

  // --- Set-up, called on this thread by the Messenger ---
  struct LinkSpec {
    NodeId node;
    uint64_t session;
    std::unique_ptr<Endpoint> endpoint;
    RingSenderConfig sender;  // endpoint and wr_id are filled in here
    uint64_t staging_offset;
    uint64_t head_word_offset;
  };
  void AddLink(LinkSpec spec);
  struct InboundSpec {
    NodeId node;
    uint16_t thread;
    uint64_t session;
    RingReceiverConfig receiver;  // wr_id is filled in here
    uint64_t ring_offset;
    uint64_t head_source_offset;
  };
  void AddInbound(const InboundSpec& spec);
  void RemoveInbound(NodeId node, uint16_t thread, uint64_t session);

  // Delivers a message handed over from another thread (or this node to itself).
  struct Envelope {
    ring::Header header;
    NodeId from;
    std::string payload;
  };
  void DeliverHandedOver(const Envelope& envelope);

 private:
  // A one-sided op posted while the endpoint had no room; `remote` is its own copy of
  // the capability the caller's request pointed at (valid during Post only).
  struct BackloggedOneSided {
    WorkRequest wr;
    RegionCapability remote;
  };
  struct Link {
    uint64_t session = 0;
    std::unique_ptr<Endpoint> endpoint;
    std::deque<BackloggedOneSided> one_sided_backlog;  // in call order
    std::unique_ptr<RingSender> sender;
    uint64_t staging_offset = 0;
    uint64_t head_word_offset = 0;
  };
  struct Inbound;
  struct PendingCall {
    ResponseHandler done;
    NodeId node;
    EventLoop::Clock::time_point deadline;
  };
  struct PendingOneSided {
    NodeId node;
    OneSidedDone done;
  };

  absl::Status SendRecord(NodeId node, const ring::Header& header, absl::string_view payload);
  absl::Status SendRecord(NodeId node, const ring::Header& header, const PayloadBuilder& payload);
  // Delivers to `thread` of this node through its loop, in a copy of the payload.
  void HandOver(uint16_t thread, const ring::Header& header, NodeId from,
                const PayloadBuilder& payload);
  void HandOver(uint16_t thread, const ring::Header& header, NodeId from,
                absl::string_view payload) {
    const CopyOf copy{payload};
    HandOver(thread, header, from, PayloadBuilder{payload.size(), copy});
  }
  void OnRecord(NodeId from, const ring::Header& header, absl::string_view payload);
  void Dispatch(const Message& message, uint16_t dst_thread);
  void CompleteCall(uint64_t rpc_id, const absl::Status& status, absl::string_view payload);
  void CompleteOneSided(const Completion& c);
  // Posts what the links' one-sided backlogs hold while their endpoints have room.
  int FlushOneSidedBacklogs();
  // Returns how many completions it handled.
  int HandleCompletions();
  void FailPeer(NodeId node, const absl::Status& why);
  void ExpireCalls();
  // Rings the receivers of everything written since the last call (RingSender::Notify).
  void NotifyPeers();
  void ReleaseLink(Link& link);

  Messenger* const messenger_;
  const uint16_t index_;
  EventLoop* const loop_;
  std::unique_ptr<CompletionQueue> cq_;
  absl::flat_hash_map<NodeId, Link> links_;
  std::vector<std::unique_ptr<Inbound>> inbound_;
  absl::flat_hash_map<uint64_t, PendingCall> pending_;
  uint64_t next_rpc_id_ = 1;
  absl::flat_hash_map<uint32_t, PendingOneSided> one_sided_;  // by sequence number
  uint32_t next_one_sided_ = 1;
  uint64_t one_sided_backlogged_ = 0;
  size_t one_sided_waiting_ = 0;  // in the links' backlogs now
  bool sent_since_notify_ = false;
  EventLoop::Clock::time_point next_expiry_check_{};
  // No pending call expires before this (it may be earlier than the true earliest).
  EventLoop::Clock::time_point earliest_deadline_ = EventLoop::Clock::time_point::max();
  MsgThreadStats stats_;
};

}  // namespace farm

#endif  // FARM_MSG_MSG_THREAD_H_
