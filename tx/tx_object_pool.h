// TxObjectPool: a worker thread's spare transaction copies (TxObject, the paper's
// ObjBuf) and the containers that index them, so that reading or allocating an object
// in a transaction allocates nothing once the thread is warm: a transaction takes its
// containers when it is made and its copies as it reads (Transaction::Insert), and gives
// them back, cleared, when it is destroyed — each copy keeping its data buffer's
// capacity for the next object, the containers theirs for the next transaction.
//
// Bounded: at most kMaxKept copies are kept, and a transaction gives back none whose
// buffer is over kMaxKeptBytes (those are freed), so a thread keeps at most about 4 MiB;
// kMaxContainers sets of containers, of at most kMaxKept entries each.
//
// Threads: its ThreadContext's only.
#ifndef FARM_TX_TX_OBJECT_POOL_H_
#define FARM_TX_TX_OBJECT_POOL_H_

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "farm/base/object_copy.h"

namespace farm::tx {

class TxObjectPool {
 public:
  static constexpr size_t kMaxKept = 512;
  static constexpr size_t kMaxKeptBytes = 8 * 1024;

  // A cleared copy, or null when none is spare.
  std::unique_ptr<TxObject> Take() {
    if (spare_.empty()) return nullptr;
    std::unique_ptr<TxObject> o = std::move(spare_.back());
    spare_.pop_back();
    return o;
  }
  // `object` must be cleared (as a new TxObject, its buffer's capacity aside).
  void Give(std::unique_ptr<TxObject> object) {
    if (spare_.size() < kMaxKept) spare_.push_back(std::move(object));
  }

  // A transaction's list of its copies and their index by address.
  struct Containers {
    std::vector<std::unique_ptr<TxObject>> objects;
    absl::flat_hash_map<uint64_t, TxObject*> by_address;
  };
  // Empty containers (with the capacity of ones given back, if any).
  Containers TakeContainers() {
    if (containers_.empty()) return {};
    Containers c = std::move(containers_.back());
    containers_.pop_back();
    return c;
  }
  // `c` must be empty; kept (up to kMaxContainers sets) unless over kMaxKept entries.
  void GiveContainers(Containers c) {
    if (containers_.size() < kMaxContainers && c.objects.capacity() <= kMaxKept &&
        c.by_address.capacity() <= 2 * kMaxKept) {
      containers_.push_back(std::move(c));
    }
  }

 private:
  // Sets of containers kept: about the transactions a thread has open at once.
  static constexpr size_t kMaxContainers = 32;

  std::vector<std::unique_ptr<TxObject>> spare_;
  std::vector<Containers> containers_;
};

}  // namespace farm::tx

#endif  // FARM_TX_TX_OBJECT_POOL_H_
