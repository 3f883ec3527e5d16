#include "farm/node/node_messages.h"

#include "absl/strings/str_format.h"
#include "farm/base/wire.h"

namespace farm::node {
namespace {

absl::Status Malformed(absl::string_view what, size_t bytes) {
  return absl::InvalidArgumentError(absl::StrFormat("malformed %s (%d bytes)", what, bytes));
}

}  // namespace

std::string EncodeHolderQuery(const HolderQuery& query) {
  return WireWriter().Put(kNodeWireFormat).Put(query.region).Put(query.epoch).Take();
}

absl::StatusOr<HolderQuery> DecodeHolderQuery(absl::string_view bytes) {
  WireReader r(bytes);
  uint8_t tag = 0;
  HolderQuery query;
  if (!r.Get(&tag) || tag != kNodeWireFormat || !r.Get(&query.region) || !r.Get(&query.epoch) || !r.done()) {
    return Malformed("region holder query", bytes.size());
  }
  return query;
}

std::string EncodeHolderReply(const HolderReply& reply) {
  return WireWriter().Put(kNodeWireFormat).Put(static_cast<uint8_t>(reply.answer)).Put(reply.epoch).Take();
}

absl::StatusOr<HolderReply> DecodeHolderReply(absl::string_view bytes) {
  WireReader r(bytes);
  uint8_t tag = 0;
  uint8_t answer = 0;
  HolderReply reply;
  if (!r.Get(&tag) || tag != kNodeWireFormat || !r.Get(&answer) || !r.Get(&reply.epoch) || !r.done() ||
      answer < static_cast<uint8_t>(HolderAnswer::kHolds) || answer > static_cast<uint8_t>(HolderAnswer::kPromotesItsCopy)) {
    return Malformed("region holder answer", bytes.size());
  }
  reply.answer = static_cast<HolderAnswer>(answer);
  return reply;
}

const char* HolderAnswerName(HolderAnswer answer) {
  switch (answer) {
    case HolderAnswer::kHolds:
      return "holds it";
    case HolderAnswer::kHandItOver:
      return "hand it over";
    case HolderAnswer::kOtherHandsOver:
      return "another backup hands it over";
    case HolderAnswer::kNotPrimary:
      return "not its primary";
    case HolderAnswer::kRetry:
      return "try again";
    case HolderAnswer::kPromotesItsCopy:
      return "promotes its own copy";
  }
  return "unknown";
}

}  // namespace farm::node
