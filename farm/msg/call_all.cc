#include "farm/msg/call_all.h"

#include <memory>

#include "absl/strings/str_cat.h"

namespace farm {

void CallAll(MsgThread& thread, MsgId id, std::vector<NodeRequest> requests,
             absl::AnyInvocable<void(const absl::Status&)> done, absl::Duration timeout,
             AnswerCheck check) {
  if (requests.empty()) {
    done(absl::OkStatus());
    return;
  }
  struct State {
    absl::AnyInvocable<void(const absl::Status&)> done;
    size_t outstanding;
    absl::Status first_error;
  };
  auto state = std::make_shared<State>(State{std::move(done), requests.size(), absl::OkStatus()});
  auto answered = [state](NodeId node, const absl::Status& status) {
    if (!status.ok() && state->first_error.ok()) {
      state->first_error = absl::Status(status.code(), absl::StrCat("node ", node, ": ", status.message()));
    }
    if (--state->outstanding == 0) state->done(state->first_error);
  };
  for (NodeRequest& r : requests) {
    const NodeId node = r.node;
    absl::Status sent = thread.Call(
        node, id, r.payload,
        [answered, node, check](const absl::Status& s, absl::string_view reply) {
          answered(node, s.ok() && check != nullptr ? check(reply) : s);
        },
        timeout);
    if (!sent.ok()) answered(node, sent);
  }
}

}  // namespace farm
