// Messages as handlers and callers see them (paper Figure 6: msgRegisterHandler,
// msgSend), plus request/response RPC on top.
#ifndef FARM_MSG_MESSAGE_H_
#define FARM_MSG_MESSAGE_H_

#include <cstdint>
#include <cstring>
#include <functional>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"
#include "farm/fabric/work_request.h"
#include "farm/msg/message_ids.h"
#include "farm/msg/ring_format.h"

namespace farm {

inline constexpr uint16_t kAnyThread = ring::kAnyThread;

// A call's error that the callee answered (MsgThread::ReplyError), as opposed to one the
// messaging layer made (no link, lost connection, deadline): the callee ran the request
// and says what happened. Marked by a status payload under this URL.
inline constexpr absl::string_view kRemoteErrorPayloadUrl = "farm.msg/remote-error";
inline bool IsRemoteError(const absl::Status& s) { return s.GetPayload(kRemoteErrorPayloadUrl).has_value(); }

// Message ids from kFirstReservedMsgId up belong to the messaging layer itself.
inline constexpr MsgId kFirstReservedMsgId = kMessagingMsgIds.first;
// Sent by a thread over a link it has just installed: the receiver then knows that
// messages (and responses) can flow back to it on that link.
inline constexpr MsgId kLinkUpMsgId = kMessagingMsgIds[1];

// Identifies a request to answer. Valid until answered; answer on the thread that
// received the request (MsgThread::Reply).
struct ReplyTo {
  NodeId node = kInvalidNode;
  uint16_t thread = 0;
  uint64_t rpc_id = 0;  // 0: the message was one-way
};

// A received message. `payload` lives in the ring and is valid only during the handler
// call: copy what must outlive it.
struct Message {
  NodeId from = kInvalidNode;
  uint16_t from_thread = 0;
  MsgId id = 0;
  absl::string_view payload;
  ReplyTo reply_to;
  bool expects_reply() const { return reply_to.rpc_id != 0; }
};

// A payload built where it is sent (eRPC's in-place messages): `bytes` bytes, all of
// which write(dst) fills. The messaging layer calls write at most once, during the send
// call, with dst in the ring's staging buffer — no intermediate string — or, when the
// message must wait (a full ring) or goes to this node, in the copy it keeps. write
// must not send on the same thread (the ring's slot is being filled).
struct PayloadBuilder {
  size_t bytes;
  absl::FunctionRef<void(char* dst)> write;
};

// A payload already in memory, as the writer of a PayloadBuilder (one copy, into the
// ring): `const CopyOf copy{bytes}; Send(..., PayloadBuilder{bytes.size(), copy})`. The
// builder refers to `copy`, which must outlive the send call.
struct CopyOf {
  absl::string_view bytes;
  void operator()(char* dst) const {
    if (!bytes.empty()) std::memcpy(dst, bytes.data(), bytes.size());
  }
};

class MsgThread;

// Runs on the thread that received the message. Registered per node before start.
using MessageHandler = std::function<void(MsgThread& thread, const Message& message)>;

// Completes an RPC, on the thread that made the call. `status` is OK with the response
// payload (valid during the call), or: Unavailable (the peer is unreachable or failed),
// DeadlineExceeded (no response in time), Unimplemented (no handler on the peer), or
// the error the peer's handler replied with.
using ResponseHandler = absl::AnyInvocable<void(const absl::Status& status,
                                                absl::string_view payload)>;

// Completes a one-sided op posted through MsgThread::PostOneSided, on the posting thread.
using OneSidedDone = absl::AnyInvocable<void(const Completion& completion)>;

}  // namespace farm

#endif  // FARM_MSG_MESSAGE_H_
