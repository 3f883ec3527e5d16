// ReadBatch: the lookups of the commands a session starts together, issued together.
// Between Begin and Flush, Get and MultiGet only gather; Flush sends every key gathered
// as one Store::MultiGet (a key asked for several times is looked up once) and hands
// each caller its values. Outside Begin..Flush they go to the store at once.
//
// Semantics are the Store's: each caller gets linearizable lookups. One lookup that
// answers several callers lies inside each one's interval (all asked before Flush, all
// answered after the lookup). When the MultiGet fails, every caller's lookup is issued
// again on its own, so an error reaches only the callers whose own lookup fails, as
// without batching.
//
// Threads and lifetime: the Store's (kv/store.h): the owning worker thread; callbacks
// run there, never inside a call. Keys are the callers' views, valid until their
// callback has run (KeyOps's rule). The batch may be destroyed with lookups in flight;
// the store must outlive them.
#ifndef FARM_KV_RESP_READ_BATCH_H_
#define FARM_KV_RESP_READ_BATCH_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kv/store.h"

namespace farm::kv::resp {

class ReadBatch {
 public:
  using Value = std::optional<std::string>;

  explicit ReadBatch(Store* store);
  ~ReadBatch();
  ReadBatch(const ReadBatch&) = delete;
  ReadBatch& operator=(const ReadBatch&) = delete;

  // Starts gathering (no-op while gathering).
  void Begin() { gathering_ = true; }
  bool gathering() const { return gathering_; }
  // Issues what was gathered and stops gathering.
  void Flush();

  void Get(absl::string_view key, Done<absl::StatusOr<Value>> done);
  // One result per key, in order.
  void MultiGet(absl::Span<const std::string> keys, Done<absl::StatusOr<std::vector<Value>>> done);

  struct Stats {
    uint64_t requests = 0;  // Get and MultiGet calls
    uint64_t batches = 0;   // MultiGets issued for two or more requests
    uint64_t batched = 0;   // requests in them
    uint64_t keys = 0;      // keys those MultiGets read (each unique key once)
    uint64_t retried = 0;   // batches whose requests were issued again on their own
  };
  const Stats& stats() const { return *stats_; }

 private:
  struct Gathered;
  struct Pool;

  Gathered& Current();

  Store* const store_;
  bool gathering_ = false;
  std::unique_ptr<Gathered> current_;
  // Gathered batches whose MultiGet completed, for reuse (their buffers keep capacity).
  std::shared_ptr<Pool> pool_;
  std::shared_ptr<Stats> stats_;  // shared with MultiGets in flight
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_READ_BATCH_H_
