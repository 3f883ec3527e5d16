#include "farm/fabric/work_request.h"

#include "absl/strings/str_format.h"

namespace farm {

std::string RegionCapability::ToString() const {
  return absl::StrFormat("cap{region=%u len=%u rkey=%016x}", region, length, rkey);
}

const char* OpcodeName(Opcode op) {
  switch (op) {
    case Opcode::kRead: return "READ";
    case Opcode::kWrite: return "WRITE";
    case Opcode::kCompareSwap: return "CAS";
    case Opcode::kFetchAdd: return "FETCH_ADD";
    case Opcode::kDisconnect: return "DISCONNECT";
  }
  return "UNKNOWN";
}

const char* CompletionStatusName(CompletionStatus status) {
  switch (status) {
    case CompletionStatus::kSuccess: return "success";
    case CompletionStatus::kLocalProtectionError: return "local protection error";
    case CompletionStatus::kRemoteAccessError: return "remote access error";
    case CompletionStatus::kRemoteInvalidRequest: return "remote invalid request";
    case CompletionStatus::kTransportError: return "transport error";
    case CompletionStatus::kFlushed: return "flushed";
  }
  return "unknown";
}

}  // namespace farm
