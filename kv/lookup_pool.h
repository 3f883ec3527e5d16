// LookupPool<Lookup>: a lock-free reader's lookup records (TableReader, LinearReader,
// ChainedReader), reused: once the pool holds as many records as lookups in flight, a
// lookup allocates no record. Lookup has at least
//   GetDone done;                      // the lookup's continuation (kv/kv_client.h)
//   std::optional<LockFreeOp> op;      // its lock-free operation
// and whatever else the reader keeps per lookup; a record taken again keeps the fields
// its last lookup left, which the reader resets.
//
// Threads: the owning reader's thread only. Records live as long as the pool.
#ifndef FARM_KV_LOOKUP_POOL_H_
#define FARM_KV_LOOKUP_POOL_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/kv_client.h"

namespace farm::kv {

template <typename Lookup>
class LookupPool {
 public:
  // A free record, or a new one.
  Lookup* Take() {
    if (free_.empty()) {
      all_.push_back(std::make_unique<Lookup>());
      return all_.back().get();
    }
    Lookup* l = free_.back();
    free_.pop_back();
    return l;
  }

  // Ends `l`'s lookup: its continuation gets `result`, then its lock-free operation
  // ends (a value may point into bytes it read, valid during the continuation only) and
  // the record is free again.
  void Finish(Lookup* l, absl::StatusOr<std::optional<absl::string_view>> result) {
    GetDone done = std::move(l->done);
    done(std::move(result));
    l->op.reset();
    free_.push_back(l);
  }

 private:
  std::vector<std::unique_ptr<Lookup>> all_;
  std::vector<Lookup*> free_;
};

}  // namespace farm::kv

#endif  // FARM_KV_LOOKUP_POOL_H_
