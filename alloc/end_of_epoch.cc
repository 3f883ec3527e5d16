#include "alloc/end_of_epoch.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "alloc/messages.h"

namespace farm::alloc {
namespace {

// The whole payload of a request and of its response.
constexpr char kTagPayload[1] = {static_cast<char>(kAllocWireFormat)};
constexpr absl::string_view kTagView(kTagPayload, sizeof(kTagPayload));

bool IsTagOnly(absl::string_view payload) { return payload == kTagView; }

absl::Status MalformedRequest(const Message& message) {
  return absl::InvalidArgumentError(absl::StrCat(
      "end-of-epoch request from node ", message.from, " is malformed: expected exactly 1 byte ",
      "(format tag ", kAllocWireFormat, "), got ", message.payload.size(), " byte(s)",
      message.payload.empty()
          ? ""
          : absl::StrCat(" starting with tag ", static_cast<uint8_t>(message.payload[0]))));
}

void HandleEndOfEpoch(EpochManager& epochs, MsgThread& thread, const Message& message) {
  if (!message.expects_reply()) return;  // nobody to tell when the epoch ends
  if (!IsTagOnly(message.payload)) {
    (void)thread.ReplyError(message.reply_to, MalformedRequest(message));
    return;
  }
  // Runs on thread's loop, as ReplyTo requires.
  epochs.AwaitQuiescence(&thread.loop(), [&thread, to = message.reply_to] {
    (void)thread.Reply(to, kTagView);
  });
}

// The state of one round; touched only on the initiating thread.
struct Round {
  absl::AnyInvocable<void(absl::Status)> done;
  size_t outstanding = 0;  // remote answers and local quiescence still to come
  absl::Status first_error;
  std::vector<NodeId> failed;
};

void Finish(Round& round) {
  absl::Status result = round.first_error;
  if (round.failed.size() > 1) {
    result = absl::Status(result.code(),
                          absl::StrCat(result.message(), " (end-of-epoch failed on nodes ",
                                       absl::StrJoin(round.failed, ", "), ")"));
  }
  auto done = std::move(round.done);
  done(std::move(result));
}

void Answered(const std::shared_ptr<Round>& round) {
  if (--round->outstanding == 0) Finish(*round);
}

void Failed(const std::shared_ptr<Round>& round, NodeId node, const absl::Status& error) {
  if (round->first_error.ok()) {
    round->first_error = absl::Status(
        error.code(), absl::StrCat("end-of-epoch request to node ", node, ": ", error.message()));
  }
  round->failed.push_back(node);
  Answered(round);
}

void OnResponse(const std::shared_ptr<Round>& round, NodeId node, const absl::Status& status,
                absl::string_view payload) {
  if (!status.ok()) return Failed(round, node, status);
  if (!IsTagOnly(payload)) {
    return Failed(round, node,
                  absl::InternalError(absl::StrCat("malformed response of ", payload.size(),
                                                   " byte(s)")));
  }
  Answered(round);
}

std::vector<NodeId> RemoteMembers(std::vector<NodeId> members, NodeId self) {
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  members.erase(std::remove(members.begin(), members.end(), self), members.end());
  return members;
}

}  // namespace

absl::Status RegisterEndOfEpochHandler(Messenger& messenger, EpochManager& epochs) {
  return messenger.RegisterHandler(
      kEndOfEpochMsgId, [&epochs](MsgThread& thread, const Message& message) {
        HandleEndOfEpoch(epochs, thread, message);
      },
      "alloc");
}

void RunEndOfEpochRound(MsgThread& thread, NodeId self, EpochManager& local,
                        std::vector<NodeId> members,
                        absl::AnyInvocable<void(absl::Status)> done, absl::Duration timeout) {
  const std::vector<NodeId> remote = RemoteMembers(std::move(members), self);
  auto round = std::make_shared<Round>();
  round->done = std::move(done);
  // Counts local quiescence too; it completes through the loop, so `done` cannot run
  // before this function returns even when every send fails at once.
  round->outstanding = remote.size() + 1;
  local.AwaitQuiescence(&thread.loop(), [round] { Answered(round); });
  for (NodeId node : remote) {
    const absl::Status sent = thread.Call(
        node, kEndOfEpochMsgId, kTagView,
        [round, node](const absl::Status& status, absl::string_view payload) {
          OnResponse(round, node, status, payload);
        },
        timeout);
    if (!sent.ok()) Failed(round, node, sent);
  }
}

}  // namespace farm::alloc
