#include "kv/key_batch.h"

#include <algorithm>

namespace farm::kv {

bool FitsBatch(uint64_t written, size_t index, const KeyUpdates& next, uint64_t budget) {
  if (index == 0) return true;
  uint64_t value = 0;
  for (const KeyOp& op : next.ops) {
    // A value over the limit is refused (the op's own error): it writes nothing.
    if (op.kind == OpKind::kPut && op.value.size() <= kMaxValueBytes) {
      value = std::max<uint64_t>(value, op.value.size());
    }
  }
  return written + next.key.size() + value + kKeyOverheadBytes <= budget;
}

}  // namespace farm::kv
