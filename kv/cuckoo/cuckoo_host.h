// CuckooHost: one machine's part of the cuckoo (Nessie) table. Install it on every node
// before the node starts; it registers the shard catalog's handlers (kv/shard_catalog.h,
// directory format 3, used only to find every member's directory object: a run of two
// small transactional objects per node). The table itself is one-sided objects:
//
//   CreateShards   allocates this machine's index objects (index_factor * pairs_per_node
//                  ITEs), data tables (per size class, a slice of entries for every
//                  worker thread and guest_slices more for compute-only members; see
//                  CuckooOptions) and a claims word with rawAlloc, creates the catalog's
//                  objects, and writes the RawPtrs (kv/cuckoo/cuckoo_map.h NodeTables)
//                  into the first of them in a transaction. Each step is done once; a
//                  failed call may be repeated.
//   Open           the catalog's shards, then every member's directory object (lock-free
//                  reads, retried until written, up to ShardCatalog::kOpenTimeout), as
//                  the CuckooMap every thread of this machine shares.
//
// No update handler: the data path runs no code on the machine holding the data.
// Membership changes after Open are not followed (as for the other layouts), and
// one-sided bytes are not replicated: a region whose primary changes loses its pairs
// (DataLoss, farm/api/one_sided.h).
//
// Threads: CreateShards and Open on a worker thread (continuations there too).
#ifndef FARM_KV_CUCKOO_CUCKOO_HOST_H_
#define FARM_KV_CUCKOO_CUCKOO_HOST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "absl/status/statusor.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/cuckoo/cuckoo_map.h"
#include "kv/cuckoo/cuckoo_ops.h"
#include "kv/cuckoo/entry_pool.h"
#include "kv/messages.h"
#include "kv/shard_catalog.h"

namespace farm::kv::cuckoo {

inline constexpr uint32_t kCuckooDirectoryFormat = 3;
inline constexpr uint32_t kDirectoryObjectBytes = 4096;
inline constexpr uint32_t kDataObjectBytes = 512 * 1024;

struct CuckooOptions {
  TableIdentity identity;
  // Pairs this machine's share of the table is sized for (the capacity a scan reports).
  uint64_t pairs_per_node = 1 << 16;
  uint32_t ways = 3;          // N: candidate index slots per key (2 or 3)
  uint32_t index_factor = 2;  // index slots per pair of capacity (load <= 1/index_factor)
  CuckooLimits limits;
  // Data entries each worker thread owns, per size class (kClassBytes: 128 B, 1 KiB,
  // 8 KiB, 64 KiB). By default the smallest class holds the node's whole capacity per
  // thread (a thread may write all of its node's share) plus slack for migrations.
  uint32_t small_entries_per_thread = 0;  // 0: pairs_per_node + pairs_per_node / 4 + 64
  uint32_t entries_1k_per_thread = 64;
  uint32_t entries_8k_per_thread = 32;
  uint32_t entries_64k_per_thread = 16;
  // Slices of entries (as many as a thread's) for the threads of compute-only members.
  uint32_t guest_slices = 1;

  absl::Status Validate() const;
  uint32_t EntriesPerThread(uint32_t size_class) const;
};

class CuckooHost {
 public:
  static absl::StatusOr<std::unique_ptr<CuckooHost>> Install(Host& host, CuckooOptions options);
  CuckooHost(const CuckooHost&) = delete;
  CuckooHost& operator=(const CuckooHost&) = delete;

  void CreateShards(Context& ctx, Done<absl::Status> done);
  void Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const CuckooMap>>> done);
  // The calling thread's slices of data entries (kv/cuckoo/cuckoo_map.h): its own
  // node's slice (its thread index), or, on a member that holds no table, a guest slice
  // of every table that has one left, each claimed with rawFetchAdd64 (Nessie writes
  // DTEs locally; a compute-only client has no local memory, so it writes remotely). The
  // member's `threads` share the tables out (ClaimSlices' comment). None when every
  // guest slice it may ask for is claimed: the client opens, its lookups work and its
  // updates answer ResourceExhausted.
  static Task<absl::StatusOr<std::vector<SliceRef>>> ClaimSlices(
      Context& ctx, std::shared_ptr<const CuckooMap> map, size_t threads);

  const CuckooOptions& options() const { return options_; }

 private:
  CuckooHost(Host& host, CuckooOptions options, std::unique_ptr<ShardCatalog> catalog)
      : host_(host), options_(std::move(options)), catalog_(std::move(catalog)) {}
  Task<absl::Status> Create(Context& ctx);
  Task<absl::StatusOr<NodeTables>> AllocateTables(Context& ctx);
  Task<absl::Status> Publish(Context& ctx, const NodeTables& tables);
  Task<absl::StatusOr<std::shared_ptr<const CuckooMap>>> Load(Context& ctx);
  std::shared_ptr<const CuckooMap> Adopt(std::shared_ptr<const CuckooMap> map);

  Host& host_;
  const CuckooOptions options_;
  const std::unique_ptr<ShardCatalog> catalog_;
  // CreateShards' progress (worker thread 0 only: CreateShardsOnNode runs it there).
  std::optional<NodeTables> tables_;
  bool catalog_created_ = false;
  bool published_ = false;
  mutable Mutex mu_;
  std::shared_ptr<const CuckooMap> map_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_HOST_H_
