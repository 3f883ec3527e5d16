#include "farm/fabric/validate.h"

#include "absl/strings/str_format.h"

namespace farm {

absl::Status ValidateWorkRequest(const WorkRequest& wr, uint32_t max_op_bytes) {
  switch (wr.opcode) {
    case Opcode::kRead:
    case Opcode::kWrite:
    case Opcode::kCompareSwap:
    case Opcode::kFetchAdd:
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("opcode %d cannot be posted", static_cast<int>(wr.opcode)));
  }
  if (wr.local == nullptr) return absl::InvalidArgumentError("work request has no local buffer");
  if (wr.remote == nullptr) return absl::InvalidArgumentError("work request has no capability");
  if (IsAtomic(wr.opcode)) {
    if (wr.length != 8) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s needs length 8, got %u", OpcodeName(wr.opcode), wr.length));
    }
    if (wr.remote_offset % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s at offset %u is not 8-byte aligned", OpcodeName(wr.opcode), wr.remote_offset));
    }
  } else if ((wr.length == 0 && !(wr.opcode == Opcode::kWrite && wr.notify != kNoDoorbell)) ||
             wr.length > max_op_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat("%s of %u bytes: must be 1..%u",
                                                      OpcodeName(wr.opcode), wr.length,
                                                      max_op_bytes));
  }
  if (wr.notify != kNoDoorbell && wr.opcode != Opcode::kWrite) {
    return absl::InvalidArgumentError("notify is only allowed on WRITE");
  }
  return absl::OkStatus();
}

}  // namespace farm
