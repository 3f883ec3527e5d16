// Checks of a work request that every backend makes before executing or sending it.
#ifndef FARM_FABRIC_VALIDATE_H_
#define FARM_FABRIC_VALIDATE_H_

#include "absl/status/status.h"
#include "farm/fabric/work_request.h"

namespace farm {

// InvalidArgument, naming the problem, when `wr` is malformed: unknown or completion-only
// opcode, no local buffer or capability, zero length (but for a WRITE with notify) or
// over `max_op_bytes`, an atomic
// whose length is not 8 or whose remote offset is not 8-byte aligned, or a notify on an
// op other than WRITE.
absl::Status ValidateWorkRequest(const WorkRequest& wr, uint32_t max_op_bytes);

inline bool IsAtomic(Opcode op) { return op == Opcode::kCompareSwap || op == Opcode::kFetchAdd; }

}  // namespace farm

#endif  // FARM_FABRIC_VALIDATE_H_
