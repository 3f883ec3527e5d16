#include "farm/fabric/work_request.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace farm {

std::string RegionCapability::ToString() const {
  return absl::StrFormat("cap{region=%u len=%u rkey=%016x}", region, length, rkey);
}

std::string EncodeCapability(const RegionCapability& cap) {
  return absl::StrFormat("%x:%x:%x:%x", cap.region, cap.length, cap.rkey, cap.remote_base);
}

absl::StatusOr<RegionCapability> DecodeCapability(absl::string_view text) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, ':');
  RegionCapability cap;
  uint32_t region = 0;
  if (parts.size() != 4 || !absl::SimpleHexAtoi(parts[0], &region) ||
      !absl::SimpleHexAtoi(parts[1], &cap.length) || !absl::SimpleHexAtoi(parts[2], &cap.rkey) ||
      !absl::SimpleHexAtoi(parts[3], &cap.remote_base)) {
    return absl::InvalidArgumentError(absl::StrCat("bad capability text '", text, "'"));
  }
  cap.region = region;
  return cap;
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
