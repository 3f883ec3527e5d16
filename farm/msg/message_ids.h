// Every message-id range of the project, in one place. A layer or service takes the ids
// of its messages from its own range (each id is static_assert'ed into it where it is
// declared); ranges never overlap (checked here, at build time); and the messenger
// refuses, at start, a second handler for an id, naming the range's owner and both
// registrants (Messenger::RegisterHandler).
//
//   0x0001-0x00ff  benchmarks         tools' own protocols on a bare messenger
//   0x0100-0x01ff  alloc              alloc/messages.h
//   0x0200-0x02ff  tx                 tx/tx_messages.h
//   0x0300-0x03ff  node               farm/node/node_messages.h
//   0x1000-0x10ff  applications       examples and tests (node::kFirstApplicationMsgId)
//   0x1100-0x11ff  kv                 kv/messages.h
//   0x1200-0x12ff  graph              graph/ (reserved)
//   0xff00-0xffff  msg                the messaging layer itself (message.h)
//
// Node::RegisterHandler (msgRegisterHandler) takes ids from 0x1000 up to 0xfeff only.
#ifndef FARM_MSG_MESSAGE_IDS_H_
#define FARM_MSG_MESSAGE_IDS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace farm {

using MsgId = uint16_t;

struct MsgIdRange {
  MsgId first;
  MsgId last;  // inclusive
  const char* owner;

  constexpr bool contains(MsgId id) const { return id >= first && id <= last; }
  // The i-th id of the range (i from 0); a compile-time error past its end when used
  // in a constant expression.
  constexpr MsgId operator[](uint32_t i) const {
    return first + i <= last ? static_cast<MsgId>(first + i) : throw "message id past its range";
  }
};

inline constexpr MsgIdRange kBenchmarkMsgIds{0x0001, 0x00ff, "benchmarks"};
inline constexpr MsgIdRange kAllocMsgIds{0x0100, 0x01ff, "alloc"};
inline constexpr MsgIdRange kTxMsgIds{0x0200, 0x02ff, "tx"};
inline constexpr MsgIdRange kNodeMsgIds{0x0300, 0x03ff, "node"};
inline constexpr MsgIdRange kApplicationMsgIds{0x1000, 0x10ff, "applications"};
inline constexpr MsgIdRange kKvMsgIds{0x1100, 0x11ff, "kv"};
inline constexpr MsgIdRange kGraphMsgIds{0x1200, 0x12ff, "graph"};
inline constexpr MsgIdRange kMessagingMsgIds{0xff00, 0xffff, "msg"};

inline constexpr MsgIdRange kMsgIdRanges[] = {kBenchmarkMsgIds, kAllocMsgIds, kTxMsgIds,    kNodeMsgIds,
                                              kApplicationMsgIds, kKvMsgIds, kGraphMsgIds, kMessagingMsgIds};

constexpr bool MsgIdRangesAreDisjoint() {
  for (const MsgIdRange& a : kMsgIdRanges) {
    if (a.first > a.last) return false;
    for (const MsgIdRange& b : kMsgIdRanges) {
      if (&a != &b && a.first <= b.last && b.first <= a.last) return false;
    }
  }
  return true;
}
static_assert(MsgIdRangesAreDisjoint(), "two message-id ranges overlap");

// The owner of the range that holds `id` ("unassigned" for none).
constexpr const char* MsgIdOwner(MsgId id) {
  for (const MsgIdRange& r : kMsgIdRanges) {
    if (r.contains(id)) return r.owner;
  }
  return "unassigned";
}

// AlreadyExists for a second handler of `id`, naming the range's owner and both
// registrants ("" is "an unnamed registrant").
inline absl::Status DuplicateHandlerError(MsgId id, absl::string_view first, absl::string_view second) {
  auto name = [](absl::string_view r) { return r.empty() ? absl::string_view("an unnamed registrant") : r; };
  return absl::AlreadyExistsError(absl::StrFormat(
      "message id 0x%04x (in %s's range) has a handler from %s already; the one from %s is refused", id,
      MsgIdOwner(id), name(first), name(second)));
}

}  // namespace farm

#endif  // FARM_MSG_MESSAGE_IDS_H_
