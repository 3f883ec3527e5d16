// UpdateQueue and UpdateBatch: where shipped updates wait at their primary, and how
// they leave in batches of many keys (kv/update_executor.h runs each batch as one
// transaction). No FaRM calls here: plain data, testable alone.
//
// Invariants (kv/update_executor.h relies on them):
//   1. A key is in at most one running batch ("busy" from TakeBatch to Release), so
//      two transactions of one executor never carry updates of the same key.
//   2. A key's updates leave in arrival order: TakeBatch takes every waiting update of
//      a key it picks, and none of a busy key or of a key past `max_keys` (those wait,
//      in order, for a later batch).
//   3. Inside a batch a key's updates are contiguous and in arrival order; the keys are
//      in the order of their first waiting update.
//
// Memory: slots, strings and scratch tables keep their capacity from batch to batch
// (keys and values are swapped between the queue's slots and the batch's, not
// reallocated), so a steady load allocates only for keys and values longer than any
// slot held before. Busy keys are counted by hash (a collision only makes a key wait).
//
// Threads: one executor's, one thread.
#ifndef FARM_KV_UPDATE_QUEUE_H_
#define FARM_KV_UPDATE_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "kv/key_batch.h"
#include "kv/key_ops.h"
#include "kv/messages.h"

namespace farm::kv {

// The updates of one batch, grouped by key. Keys are "remaining" until Consume: the
// applier's input is remaining(), and reply_to(k) / key(k) index the same keys.
class UpdateBatch {
 public:
  absl::Span<KeyUpdates> remaining() { return absl::MakeSpan(keys_).subspan(done_, key_count_ - done_); }
  size_t remaining_keys() const { return key_count_ - done_; }
  size_t remaining_updates() const;
  // The messages to answer for remaining key k's ops, in the same order.
  absl::Span<const Message> reply_to(size_t k) const;
  // The first n remaining keys are finished (committed or answered).
  void Consume(size_t n) { done_ += n; }
  // Moves the last n remaining keys (n < remaining_keys()) to `other`, which must be
  // empty; both batches' views stay valid.
  void MoveTailTo(size_t n, UpdateBatch& other);
  bool empty() const { return remaining_keys() == 0; }

 private:
  friend class UpdateQueue;
  // Makes room for `keys` keys and `updates` updates (no views yet).
  void Reset(size_t keys, size_t updates);
  // Builds keys_[k] from names_, first_ and the counts (after the ops are in place).
  void BuildViews();

  std::vector<std::string> names_;   // [0, key_count_): the keys
  std::vector<size_t> first_;        // [0, key_count_ + 1): key k's ops are [first_[k], first_[k+1])
  std::vector<KeyOp> ops_;           // [0, op_count_)
  std::vector<Message> reply_to_;    // parallel to ops_
  std::vector<KeyUpdates> keys_;     // [0, key_count_): views of the above
  size_t key_count_ = 0;
  size_t op_count_ = 0;
  size_t done_ = 0;
};

class UpdateQueue {
 public:
  // Appends an update; its key and value are copied, its message kept without payload.
  void Push(const UpdateRequest& request, const Message& message);
  size_t size() const { return size_; }

  // Moves into `batch` every waiting update of up to `max_keys` keys that are not busy
  // (invariants 2 and 3) and marks those keys busy; leaves `batch` empty when there is
  // none. `batch` must be empty (remaining_keys() == 0).
  void TakeBatch(size_t max_keys, UpdateBatch& batch);
  // `key` becomes busy / stops being busy (counted: MarkBusy twice, Release twice). A
  // batch's keys stay busy across UpdateBatch::MoveTailTo (counted by content).
  void MarkBusy(absl::string_view key);
  void Release(absl::string_view key);
  size_t busy_keys() const { return busy_.size(); }

 private:
  struct Waiting {
    std::string key;
    KeyOp op;
    Message reply_to;
  };
  static constexpr uint32_t kStays = ~uint32_t{0};

  bool Busy(absl::string_view key) const;

  std::vector<Waiting> waiting_;  // [0, size_): in arrival order
  size_t size_ = 0;
  absl::flat_hash_map<uint64_t, uint32_t> busy_;  // key hash -> running batches' keys with it
  // TakeBatch's scratch, kept for its capacity.
  absl::flat_hash_map<absl::string_view, uint32_t> group_;  // views into waiting_ keys
  std::vector<uint32_t> group_of_;
  std::vector<size_t> next_;
};

}  // namespace farm::kv

#endif  // FARM_KV_UPDATE_QUEUE_H_
