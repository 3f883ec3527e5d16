// The copies of objects that the public API hands to applications (farm/api/farm.h):
//   TxObject    a transaction's private copy (the paper's ObjBuf): read once, modified
//               in place, written at commit (tx/transaction.h owns its lifecycle);
//   ObjectRead  a lock-free read's consistent copy, valid during its continuation.
// They live here, below the transaction layer, so that the public API can name them
// without including it.
#ifndef FARM_BASE_OBJECT_COPY_H_
#define FARM_BASE_OBJECT_COPY_H_

#include <cstdint>
#include <span>
#include <string>

#include "farm/base/address.h"

namespace farm {

namespace tx {
class Transaction;
}  // namespace tx

// "Whatever version it has": the version of a TxObject allocated in its transaction, and
// of a lock entry for an object the transaction did not read (allocated in it, or freed
// unread). Never a real version (its lock bits are set).
inline constexpr uint64_t kAnyVersion = ~uint64_t{0};

class TxObject {
 public:
  FatPtr ptr() const { return ptr_; }
  std::span<char> data() { return {data_.data(), data_.size()}; }
  std::span<const char> data() const { return {data_.data(), data_.size()}; }
  // objGetIncarnation: the low 32 bits of the incarnation it was read at.
  uint32_t incarnation() const { return ptr_.incarnation; }
  // objCommittedPtr: the pointer to the object once its transaction commits — ptr(),
  // with the new incarnation if the transaction gives it one.
  FatPtr committed_ptr() const {
    FatPtr p = ptr_;
    if (new_incarnation_) ++p.incarnation;
    return p;
  }
  // The version read (kAnyVersion for an object allocated in the transaction).
  uint64_t version() const { return version_; }

 private:
  friend class tx::Transaction;  // the only writer of the state below
  FatPtr ptr_;
  uint64_t version_ = kAnyVersion;
  std::string data_;
  bool read_ = false;
  bool written_ = false;
  bool allocated_ = false;
  bool freed_ = false;
  bool new_incarnation_ = false;
  bool raw_ = false;  // a one-sided object: allocated (kAllocRaw) or freed (kFreeRaw) as one
};

struct ObjectRead {
  uint64_t version = 0;          // the header version of the accepted copy
  std::span<const char> data;    // the payload, valid during the continuation only
};

}  // namespace farm

#endif  // FARM_BASE_OBJECT_COPY_H_
