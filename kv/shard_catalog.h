// ShardCatalog: one machine's part in opening a sharded table, for any layout whose
// memory is runs of equal objects on every machine (hopscotch buckets, linear-probing
// slot groups). It registers the catalog's message handlers (kv/messages.h: directory,
// open, map) before the node starts.
//
//   CreateShards   allocates this machine's shards (runs of adjacent objects, paper:
//                  "each machine allocates shards ... and exchanges pointers") and
//                  publishes them in its directory. Once per machine, after the cluster
//                  has formed (so the shards' regions have backups). The directory is
//                  kept as the node's durable metadata (Host::PutMetadata): a node
//                  restarted on its data takes its shards back instead, so a cluster
//                  restarted with the same members opens the same table.
//   Open           the whole table, decided once for the cluster: a machine asks the
//                  catalog coordinator (the primary, in the current configuration, of
//                  the region of its TableIdentity's catalog address) for the table's
//                  shards. The coordinator opens it once: it takes the shards a member
//                  opened already (it may be the coordinator only because it joined
//                  later: placement moved the catalog address to it), else it asks
//                  every member for its directory (retrying while some have not created
//                  their shards yet, up to kOpenTimeout; not before the coordinator
//                  itself is ready: Host::ready waits for the cluster's members). Every
//                  machine adopts the coordinator's shards, in the same order (ascending
//                  address), so all locate every key alike; a machine that joins later
//                  gets the same table (its own shards stay unused). Cached, so a
//                  machine asks once.
//
// Directories carry the layout's ShardFormat: a member whose format or parameters
// differ fails the open (FailedPrecondition), and so does a restarted node whose kept
// shards have another layout. Directory bytes (format 1, hopscotch):
//   u32 format, the format's parameter bytes, u32 shard count, then per shard u64 first
//   address, u32 incarnation, u32 stride, u32 objects, u32 owner.
//
// Threads: CreateShards and Open run on the calling worker thread (their continuations
// too); the directory and the opened table are guarded for the other threads.
// Membership changes after Open are not followed (no re-sharding; see kv/README.md).
#ifndef FARM_KV_SHARD_CATALOG_H_
#define FARM_KV_SHARD_CATALOG_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/messages.h"
#include "kv/shard.h"
#include "kv/store.h"

namespace farm::kv {

// What every directory says of the table's layout; all members must publish the same.
struct ShardFormat {
  uint32_t format = 0;  // names the layout: kHopscotchDirectoryFormat, kLinearDirectoryFormat,
                        // kChainedDirectoryFormat
  std::string params;   // the layout's parameters (a fixed size per format), compared bytewise
};

// `format` with its parameters as u32 values, in order (each layout's ShardFormat).
ShardFormat MakeShardFormat(uint32_t format, std::initializer_list<uint32_t> params);

inline constexpr uint32_t kHopscotchDirectoryFormat = 1;
inline constexpr uint32_t kLinearDirectoryFormat = 2;
inline constexpr uint32_t kChainedDirectoryFormat = 3;

struct ShardCatalogOptions {
  TableIdentity identity;
  ShardFormat format;
  uint32_t object_bytes = 0;      // the payload of the objects shards are runs of
  uint64_t objects_per_node = 0;  // >= 2
};

// The opened table: every member's shards, ascending by address (the same on every
// machine).
using ShardList = std::vector<Shard>;

class ShardCatalog {
 public:
  static constexpr absl::Duration kOpenTimeout = absl::Seconds(30);
  static constexpr uint32_t kObjectsPerAllocTx = 64;

  // Registers the catalog's handlers; call before the node starts. InvalidArgument for
  // fewer than 2 objects per node or objects of no size.
  static absl::StatusOr<std::unique_ptr<ShardCatalog>> Install(Host& host, ShardCatalogOptions options);
  ShardCatalog(const ShardCatalog&) = delete;
  ShardCatalog& operator=(const ShardCatalog&) = delete;

  // FailedPrecondition once created. A failed creation (Unavailable while the node's
  // links to its backups come up) may be tried again; shards it allocated before
  // failing stay allocated, unused.
  void CreateShards(Context& ctx, Done<absl::Status> done);
  void Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardList>>> done);

  const ShardCatalogOptions& options() const { return options_; }
  std::vector<Shard> local_shards() const;

  // The directory bytes for `shards` (exposed for tests).
  static std::string EncodeDirectory(const ShardFormat& format, const std::vector<Shard>& shards);
  // The shards of a directory of `expected`'s format and parameters: FailedPrecondition
  // for another layout, InvalidArgument for bytes that are not a directory.
  static absl::StatusOr<std::vector<Shard>> DecodeDirectory(const ShardFormat& expected, absl::string_view bytes);

 private:
  ShardCatalog(Host* host, ShardCatalogOptions options);
  void OnDirectoryRequest(Context& ctx, const Message& message);
  // A member asks for the table this machine opened (NotFound: none).
  void OnMapRequest(Context& ctx, const Message& message);
  // As the catalog coordinator: the table as this machine opened it from the members'
  // directories (opening it first if needed).
  void OnOpenRequest(Context& ctx, const Message& message);
  // The coordinator's table, asked for over the open message.
  Task<absl::StatusOr<std::shared_ptr<const ShardList>>> FetchFromCatalog(Context& ctx);
  // As the coordinator: a member's opened table, else every member's directory.
  Task<absl::StatusOr<std::shared_ptr<const ShardList>>> Fetch(Context& ctx);
  // Checks and sorts the shards of a table.
  absl::StatusOr<std::shared_ptr<const ShardList>> Build(std::vector<Shard> shards) const;
  // Keeps the first table opened on this machine; returns the one every thread uses.
  std::shared_ptr<const ShardList> Adopt(std::shared_ptr<const ShardList> table);

  Host* const host_;
  const ShardCatalogOptions options_;
  mutable Mutex mu_;
  bool creating_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::vector<Shard>> shards_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const ShardList> table_ ABSL_GUARDED_BY(mu_);
  // Per thread (index = the thread's index): opens waiting for this thread's fetch.
  std::vector<std::vector<Done<absl::StatusOr<std::shared_ptr<const ShardList>>>>> opening_;
};

}  // namespace farm::kv

#endif  // FARM_KV_SHARD_CATALOG_H_
