// CuckooClient: one worker thread's handle on the cuckoo (Nessie) table, its KvClient
// (kv/kv_client.h). Get, MultiGet and Update run Nessie's client-driven protocol
// (kv/cuckoo/cuckoo_ops.h) with one-sided operations only: no message, no code on the
// machines holding the index or the data. BeginTxn answers Unimplemented
// (kv/cuckoo/cuckoo_txn.h). Scan reads every index object and the header of every DTE
// they name (a fuzzy snapshot): bucket_slots is the pair capacity the table is sized
// for (pairs_per_node per node), index_slots the N-way index's 64-bit entries.
//
// Limits: keys and values as kv/key_ops.h (the largest data entry holds a pair at the
// limits); a thread whose data table has no free entry of the pair's size class, or a
// PUT that finds no index slot within max_displacement displacements, is
// ResourceExhausted.
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_CUCKOO_CUCKOO_CLIENT_H_
#define FARM_KV_CUCKOO_CUCKOO_CLIENT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/cuckoo/cuckoo_map.h"
#include "kv/cuckoo/cuckoo_ops.h"
#include "kv/kv_client.h"

namespace farm::kv::cuckoo {

class CuckooClient final : public KvClient {
 public:
  // `slices`: the thread's data entries (CuckooHost::ClaimSlices).
  CuckooClient(Context& ctx, std::shared_ptr<const CuckooMap> map,
               const std::vector<SliceRef>& slices, CuckooLimits limits);

  void Get(absl::string_view key, GetDone done) override;
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) override;
  // InvalidArgument for a key or value over the limits (checked here, nothing is done).
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done) override;
  void Scan(Done<absl::StatusOr<TableScan>> done) override;
  std::unique_ptr<StoreTxn> BeginTxn() override;
  const LookupStats& lookup_stats() const override { return ops_.lookup_stats(); }
  Context& ctx() const override { return ctx_; }

  CuckooOps& ops() { return ops_; }
  const CuckooMap& map() const { return *map_; }

 private:
  Context& ctx_;
  const std::shared_ptr<const CuckooMap> map_;
  CuckooOps ops_;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_CLIENT_H_
