// CatalogHost<Table>: one machine's part of a layout whose memory is a ShardCatalog's
// shards and whose updates are shipped to the key's primary (hopscotch, linear,
// chained). It holds what those layouts' hosts share: the catalog (kv/shard_catalog.h),
// the updates' handler (kv/update_dispatch.h) and the table opened on this machine. A
// layout's host derives from it, installs it with InstallParts before the node starts,
// and supplies Build (its Table from the opened shards) and MakeApplier (its
// KeyOpsApplier for an opened table).
//
//   CreateShards   allocates this machine's shards and publishes them in its directory,
//                  kept as durable metadata (ShardCatalog::CreateShards).
//   Open           the table, decided once for the cluster by the catalog coordinator
//                  (ShardCatalog::Open) and built by the layout from its shards: every
//                  machine builds the same one. The first built on this machine is
//                  kept (OnAdopted hears it, once) and every thread uses it.
//   updates        shipped updates arriving here run in the receiving thread's
//                  UpdateExecutor with the layout's applier, made on the thread's first
//                  update from the opened table.
//
// Table: a value with shared ownership, cheap to copy (a shared_ptr, or a struct of
// them). Build, OnAdopted and MakeApplier run once per opening thread at most (not per
// operation), so they are virtual.
//
// Threads: CreateShards and Open run on the calling worker thread (their continuations
// too, never inside the call); the opened table is guarded for the other threads; each
// thread's executor is touched by that thread only. Membership changes after Open are
// not followed (no re-sharding; see kv/README.md).
#ifndef FARM_KV_CATALOG_HOST_H_
#define FARM_KV_CATALOG_HOST_H_

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "kv/shard_catalog.h"
#include "kv/store.h"
#include "kv/update_dispatch.h"
#include "kv/update_executor.h"

namespace farm::kv {

template <typename Table>
class CatalogHost {
 public:
  CatalogHost(const CatalogHost&) = delete;
  CatalogHost& operator=(const CatalogHost&) = delete;

  // FailedPrecondition once created. A failed creation (Unavailable while the node's
  // links to its backups come up) may be tried again; shards it allocated before
  // failing stay allocated, unused.
  void CreateShards(Context& ctx, Done<absl::Status> done) {
    catalog_->CreateShards(ctx, std::move(done));
  }
  void Open(Context& ctx, Done<absl::StatusOr<Table>> done);

  std::vector<Shard> local_shards() const { return catalog_->local_shards(); }
  // Sum over this machine's executors; call with the node stopped or quiescent.
  UpdateExecutorStats update_stats() const { return updates_->stats(); }

 protected:
  CatalogHost() = default;
  virtual ~CatalogHost() = default;

  // Installs the catalog and registers the updates' handler on catalog.identity's
  // update_msg; once, from the layout's Install, before the node starts. The handlers
  // keep `this`: the host must outlive the node's message handling.
  absl::Status InstallParts(Host& host, ShardCatalogOptions catalog);

  // The layout's table from the cluster's shards (on the opening thread).
  virtual absl::StatusOr<Table> Build(const ShardList& shards) const = 0;
  // The first table opened on this machine, before any thread gets it; with the host's
  // table lock held (it must not call Open).
  virtual void OnAdopted(const Table& table) {}
  // The layout's applier for shipped updates on `table`.
  virtual std::shared_ptr<const KeyOpsApplier> MakeApplier(const Table& table) const = 0;

 private:
  // Keeps the first table opened on this machine; returns the one every thread uses.
  Table Adopt(Table table);

  std::unique_ptr<ShardCatalog> catalog_;
  std::unique_ptr<UpdateDispatch> updates_;
  mutable Mutex mu_;
  std::optional<Table> table_ ABSL_GUARDED_BY(mu_);
};

template <typename Table>
absl::Status CatalogHost<Table>::InstallParts(Host& host, ShardCatalogOptions catalog) {
  const TableIdentity identity = catalog.identity;
  absl::StatusOr<std::unique_ptr<ShardCatalog>> installed =
      ShardCatalog::Install(host, std::move(catalog));
  if (!installed.ok()) return installed.status();
  catalog_ = std::move(*installed);
  updates_ = std::make_unique<UpdateDispatch>(
      host.thread_count(),
      [this](Context& ctx, Done<absl::StatusOr<std::shared_ptr<const KeyOpsApplier>>> done) {
        Open(ctx, [this, done = std::move(done)](absl::StatusOr<Table> table) mutable {
          if (!table.ok()) return done(table.status());
          done(MakeApplier(*table));
        });
      });
  UpdateDispatch* updates = updates_.get();
  return msgRegisterHandler(
      host, identity.update_msg,
      [updates](Context& ctx, const Message& m) { updates->OnUpdate(ctx, m); }, identity.name);
}

template <typename Table>
void CatalogHost<Table>::Open(Context& ctx, Done<absl::StatusOr<Table>> done) {
  std::optional<Table> table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  if (table.has_value()) {
    ctx.Defer(
        [table = std::move(*table), done = std::move(done)]() mutable { done(std::move(table)); });
    return;
  }
  catalog_->Open(ctx, [this, done = std::move(done)](
                          absl::StatusOr<std::shared_ptr<const ShardList>> shards) mutable {
    if (!shards.ok()) return done(shards.status());
    absl::StatusOr<Table> built = Build(**shards);
    if (!built.ok()) return done(built.status());
    done(Adopt(std::move(*built)));
  });
}

template <typename Table>
Table CatalogHost<Table>::Adopt(Table table) {
  MutexLock lock(&mu_);
  if (!table_.has_value()) {
    table_ = std::move(table);
    OnAdopted(*table_);
  }
  return *table_;  // every thread uses the same table
}

}  // namespace farm::kv

#endif  // FARM_KV_CATALOG_HOST_H_
