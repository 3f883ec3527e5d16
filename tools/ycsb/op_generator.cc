#include "tools/ycsb/op_generator.h"

#include <algorithm>
#include <variant>

namespace farm::ycsb {

KeyBatch::KeyBatch(size_t capacity, size_t max_key_bytes)
    : max_key_bytes_(max_key_bytes),
      arena_(capacity * max_key_bytes),
      pointers_(capacity),
      lengths_(capacity) {}

void KeyBatch::Add(const RecordFormat& format, int64_t keynum) {
  char* slot = arena_.data() + size_ * max_key_bytes_;
  const absl::string_view key = format.Key(keynum, absl::MakeSpan(slot, max_key_bytes_));
  pointers_[size_] = key.data();
  lengths_[size_] = key.size();
  ++size_;
}

OpGenerator::OpGenerator(CoreWorkload& workload, uint64_t seed)
    : workload_(&workload),
      rng_(seed),
      key_chooser_(workload.NewKeyChooser()),
      scan_length_(1, workload.spec().max_scan_length) {
  const WorkloadSpec& s = workload.spec();
  op_chooser_.Add(OpType::kRead, s.read_proportion);
  op_chooser_.Add(OpType::kUpdate, s.update_proportion);
  op_chooser_.Add(OpType::kInsert, s.insert_proportion);
  op_chooser_.Add(OpType::kScan, s.scan_proportion);
  op_chooser_.Add(OpType::kReadModifyWrite, s.read_modify_write_proportion);
}

int64_t OpGenerator::NextKeynum() {
  const int64_t last = workload_->insert_sequence().Last();
  for (;;) {
    const int64_t keynum =
        std::visit([this](auto& chooser) { return chooser.Next(rng_); }, key_chooser_);
    if (keynum <= last) return keynum;
  }
}

Op OpGenerator::Next() {
  Op op;
  op.type = op_chooser_.Next(rng_);
  if (op.type == OpType::kInsert) {
    op.keynum = workload_->insert_sequence().Next();
    return op;
  }
  op.keynum = NextKeynum();
  if (op.type == OpType::kScan) {
    // Records past the last acknowledged insert may not exist yet: stop there.
    const int64_t available = workload_->insert_sequence().Last() - op.keynum + 1;
    op.scan_length = static_cast<int32_t>(std::min(scan_length_.Next(rng_), available));
  }
  return op;
}

void OpGenerator::ScanKeys(const Op& op, KeyBatch* batch) const {
  batch->Clear();
  for (int32_t i = 0; i < op.scan_length; ++i) batch->Add(format(), op.keynum + i);
}

}  // namespace farm::ycsb
