// TableHost: one machine's part of the key-value store. Install it on every node before
// the node starts; it registers the kv message handlers (kv/messages.h).
//
//   CreateShards   allocates this machine's shards (runs of adjacent buckets, paper:
//                  "each machine allocates shards ... and exchanges pointers") and
//                  publishes them in its directory. Once per machine, after the cluster
//                  has formed (so the shards' regions have backups). The directory is
//                  kept as the node's durable metadata (Host::PutMetadata): a node
//                  restarted on its data takes its shards back instead, so a cluster
//                  restarted with the same members opens the same table.
//   Open           the whole table, decided once for the cluster: a machine asks the
//                  catalog coordinator (the primary, in the current configuration, of
//                  the region of its TableIdentity's catalog address) for the table's
//                  ShardMap. The coordinator opens it once: it takes the map a member
//                  opened already (it may be the coordinator only because it joined
//                  later: placement moved the catalog address to it), else it asks
//                  every member for its directory (retrying while some have not created
//                  their shards yet, up to kOpenTimeout; not before the coordinator
//                  itself is ready: Host::ready waits for the cluster's members). Every
//                  machine adopts the coordinator's map, with its shards in the same
//                  order, so all build the same one; a machine that joins later gets
//                  the same map (its own shards stay unused). Cached, so a machine asks
//                  once.
//   updates        shipped updates arriving here run in the receiving thread's
//                  UpdateExecutor (flat combining, single-machine transactions).
//
// Threads: CreateShards and Open run on the calling worker thread (their continuations
// too); the directory and map are guarded for the other threads; each thread's executor
// is touched by that thread only. Membership changes after Open are not followed (no
// re-sharding; see kv/README.md).
#ifndef FARM_KV_TABLE_HOST_H_
#define FARM_KV_TABLE_HOST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/messages.h"
#include "kv/shard_map.h"
#include "kv/store.h"
#include "kv/update_executor.h"

namespace farm::kv {

struct TableOptions {
  TableIdentity identity;  // the kv service's table unless another application's
  TableLayout layout;
  // Buckets this machine allocates (slots = buckets * H/2). Shards are runs of adjacent
  // buckets, at most one allocator block each.
  uint64_t buckets_per_node = 1 << 14;
};

class TableHost {
 public:
  static constexpr absl::Duration kOpenTimeout = absl::Seconds(30);
  static constexpr uint32_t kBucketsPerAllocTx = 64;

  // Registers the handlers; call before the node starts.
  static absl::StatusOr<std::unique_ptr<TableHost>> Install(Host& host, TableOptions options);
  TableHost(const TableHost&) = delete;
  TableHost& operator=(const TableHost&) = delete;

  // FailedPrecondition once created. A failed creation (Unavailable while the node's
  // links to its backups come up) may be tried again; shards it allocated before
  // failing stay allocated, unused.
  void CreateShards(Context& ctx, Done<absl::Status> done);
  void Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardMap>>> done);

  const TableOptions& options() const { return options_; }
  std::vector<Shard> local_shards() const;
  // Sum over this machine's executors; call with the node stopped or quiescent.
  UpdateExecutorStats update_stats() const;

 private:
  TableHost(Host* host, TableOptions options);
  void OnDirectoryRequest(Context& ctx, const Message& message);
  void OnUpdate(Context& ctx, const Message& message);
  // A member asks for the map this machine opened the table with (NotFound: none).
  void OnMapRequest(Context& ctx, const Message& message);
  // As the catalog coordinator: the table as this machine opened it from the members'
  // directories (opening it first if needed).
  void OnOpenRequest(Context& ctx, const Message& message);
  // The coordinator's map, asked for over kKvOpenMsgId.
  Task<absl::StatusOr<std::shared_ptr<const ShardMap>>> FetchFromCatalog(Context& ctx);
  // Keeps the first map opened on this machine; returns the one every thread uses.
  std::shared_ptr<const ShardMap> Adopt(std::shared_ptr<const ShardMap> map);
  UpdateExecutor& ExecutorOf(Context& ctx, std::shared_ptr<const ShardMap> map);
  Task<absl::StatusOr<std::shared_ptr<const ShardMap>>> Fetch(Context& ctx);

  Host* const host_;
  const TableOptions options_;
  mutable Mutex mu_;
  bool creating_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::vector<Shard>> shards_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ShardMap> map_ ABSL_GUARDED_BY(mu_);
  // Per thread (index = the thread's index): touched by that thread only.
  std::vector<std::unique_ptr<UpdateExecutor>> executors_;
  std::vector<std::vector<Done<absl::StatusOr<std::shared_ptr<const ShardMap>>>>> opening_;
};

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_HOST_H_
