// OpGenerator: one client thread's stream of YCSB operations, and the key and value
// bytes they need, built into buffers the caller owns (no allocation per operation).
//
// Usage, per client thread (a synchronous thread or an event-driven application thread
// alike):
//   OpGenerator gen(workload, seed);
//   std::vector<char> key(gen.format().max_key_bytes()), value(gen.format().value_bytes());
//   KeyBatch batch(workload.spec().max_scan_length, gen.format().max_key_bytes());
//   Op op = gen.Next();
//   absl::string_view k = gen.Key(op.keynum, absl::MakeSpan(key));
//   ... kRead: get k; kUpdate / kInsert: put k, gen.Value(op.keynum, value);
//   ... kScan: gen.ScanKeys(op, &batch), multi-get batch;
//   ... kReadModifyWrite: get k, then put k, gen.Value(op.keynum, value);
//   if (op.type == OpType::kInsert) gen.AcknowledgeInsert(op);   // once it completed
//
// Contract: an insert's record number comes from the workload's shared insert sequence;
// the client must call AcknowledgeInsert once the insert has completed (failed or not,
// as YCSB), or later reads under "latest" and scans stop advancing past it. Reads,
// updates and scans only name records whose inserts were acknowledged, so on a correct
// store they always find their record.
//
// Not thread-safe: one per thread. Deterministic given the seed and the order in which
// all threads' inserts are acknowledged. The CoreWorkload must outlive it.
#ifndef FARM_TOOLS_YCSB_OP_GENERATOR_H_
#define FARM_TOOLS_YCSB_OP_GENERATOR_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "tools/ycsb/generators.h"
#include "tools/ycsb/op_type.h"
#include "tools/ycsb/random.h"
#include "tools/ycsb/record_format.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {

struct Op {
  OpType type = OpType::kRead;
  int64_t keynum = 0;       // the record; for a scan, the first record
  int32_t scan_length = 0;  // kScan only: records to read, >= 1
};

// KeyBatch: up to `capacity` keys in one arena, for a scan's multi-get. Keys are
// reachable as views or as the pointer and length arrays that C client libraries take
// (libmemcached's memcached_mget, hiredis' redisCommandArgv). Reused across operations;
// Clear() keeps the memory.
class KeyBatch {
 public:
  KeyBatch(size_t capacity, size_t max_key_bytes);

  void Clear() { size_ = 0; }
  // Appends the key of `keynum`; requires size() < capacity().
  void Add(const RecordFormat& format, int64_t keynum);

  size_t size() const { return size_; }
  size_t capacity() const { return lengths_.size(); }
  absl::string_view key(size_t i) const { return absl::string_view(pointers_[i], lengths_[i]); }
  const char* const* pointers() const { return pointers_.data(); }
  const size_t* lengths() const { return lengths_.data(); }

 private:
  size_t max_key_bytes_;
  size_t size_ = 0;
  std::vector<char> arena_;
  std::vector<const char*> pointers_;
  std::vector<size_t> lengths_;
};

class OpGenerator {
 public:
  OpGenerator(CoreWorkload& workload, uint64_t seed);

  // The next operation, drawn with the workload's proportions.
  Op Next();
  // Marks an insert returned by Next() as completed. ResourceExhausted when more than
  // AcknowledgedCounterGenerator::kWindow inserts are outstanding.
  absl::Status AcknowledgeInsert(const Op& insert) {
    return workload_->insert_sequence().Acknowledge(insert.keynum);
  }

  const RecordFormat& format() const { return workload_->format(); }
  // format().Key / Value, with a fresh random salt for the value's filler.
  absl::string_view Key(int64_t keynum, absl::Span<char> out) const {
    return format().Key(keynum, out);
  }
  absl::string_view Value(int64_t keynum, absl::Span<char> out) {
    return format().Value(keynum, rng_.Next(), out);
  }
  // The keys of a scan's records op.keynum .. op.keynum + op.scan_length - 1; `batch`
  // must hold op.scan_length keys (the workload's max_scan_length does).
  void ScanKeys(const Op& op, KeyBatch* batch) const;

  Random64& rng() { return rng_; }

 private:
  // A record for a read, update, scan or read-modify-write: drawn from the key chooser,
  // redrawn while past the last acknowledged insert (YCSB's nextKeynum).
  int64_t NextKeynum();

  CoreWorkload* workload_;
  Random64 rng_;
  DiscreteGenerator<OpType> op_chooser_;
  KeyChooser key_chooser_;
  UniformLongGenerator scan_length_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_OP_GENERATOR_H_
