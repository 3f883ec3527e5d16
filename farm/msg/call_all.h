// CallAll: one request to each of several nodes, one continuation once every node has
// answered (or failed) — the shape of every replication and commit phase.
#ifndef FARM_MSG_CALL_ALL_H_
#define FARM_MSG_CALL_ALL_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/msg/msg_thread.h"

namespace farm {

struct NodeRequest {
  NodeId node = kInvalidNode;
  std::string payload;
};

// Checks a successful answer's payload; the default accepts any.
using AnswerCheck = absl::Status (*)(absl::string_view answer);

// Sends `id` with each request's payload to its node from `thread` and runs `done` on
// that thread once all have answered: OK, or the first error prefixed with the node
// that gave it. Runs `done` before returning when `requests` is empty or every send
// failed at once. `timeout` as MsgThread::Call's.
void CallAll(MsgThread& thread, MsgId id, std::vector<NodeRequest> requests,
             absl::AnyInvocable<void(const absl::Status&)> done,
             absl::Duration timeout = absl::ZeroDuration(), AnswerCheck check = nullptr);

}  // namespace farm

#endif  // FARM_MSG_CALL_ALL_H_
