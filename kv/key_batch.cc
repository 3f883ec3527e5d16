#include "kv/key_batch.h"

#include <algorithm>

namespace farm::kv {

uint64_t EstimatedWriteBytes(const KeyUpdates& key) {
  uint64_t value = 0;
  for (const KeyOp& op : key.ops) {
    // A value over the limit is refused (the op's own error): it writes nothing.
    if (op.kind == OpKind::kPut && op.value.size() <= kMaxValueBytes) {
      value = std::max<uint64_t>(value, op.value.size());
    }
  }
  return key.key.size() + value + kKeyOverheadBytes;
}

bool WriteBudget::Fits(const Tx& tx, size_t index, const KeyUpdates& next) {
  const uint64_t estimate = EstimatedWriteBytes(next);
  if (index > 0 && known_ + estimate > budget_) {
    known_ = txWriteBytes(tx);
    if (known_ + estimate > budget_) return false;
  }
  known_ += estimate;
  return true;
}

}  // namespace farm::kv
