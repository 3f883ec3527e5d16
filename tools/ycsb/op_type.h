// OpType: the five YCSB CoreWorkload operations, and their names as YCSB prints them.
#ifndef FARM_TOOLS_YCSB_OP_TYPE_H_
#define FARM_TOOLS_YCSB_OP_TYPE_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace farm::ycsb {

enum class OpType : int { kRead = 0, kUpdate, kInsert, kScan, kReadModifyWrite };
inline constexpr size_t kNumOpTypes = 5;

inline constexpr OpType kAllOpTypes[kNumOpTypes] = {OpType::kRead, OpType::kUpdate, OpType::kInsert,
                                                    OpType::kScan, OpType::kReadModifyWrite};

inline constexpr size_t OpIndex(OpType t) { return static_cast<size_t>(t); }

// "READ", "UPDATE", "INSERT", "SCAN", "READ-MODIFY-WRITE" (YCSB's measurement names).
inline absl::string_view OpTypeName(OpType t) {
  switch (t) {
    case OpType::kRead:
      return "READ";
    case OpType::kUpdate:
      return "UPDATE";
    case OpType::kInsert:
      return "INSERT";
    case OpType::kScan:
      return "SCAN";
    case OpType::kReadModifyWrite:
      return "READ-MODIFY-WRITE";
  }
  return "?";
}

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_OP_TYPE_H_
