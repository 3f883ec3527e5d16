#include "kv/table_host.h"

#include <utility>

#include "kv/table_ops.h"

namespace farm::kv {

absl::StatusOr<std::unique_ptr<TableHost>> TableHost::Install(Host& host, TableOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  if (options.buckets_per_node < 2) return absl::InvalidArgumentError("a node needs at least 2 buckets");
  ShardCatalogOptions catalog;
  catalog.identity = options.identity;
  catalog.format = HopscotchFormat(options.layout);
  catalog.object_bytes = options.layout.bucket_bytes();
  catalog.objects_per_node = options.buckets_per_node;
  absl::StatusOr<std::unique_ptr<ShardCatalog>> installed = ShardCatalog::Install(host, std::move(catalog));
  if (!installed.ok()) return installed.status();
  std::unique_ptr<TableHost> table(new TableHost(options, std::move(*installed)));
  TableHost* self = table.get();
  table->updates_ = std::make_unique<UpdateDispatch>(
      host.thread_count(),
      [self](Context& ctx, Done<absl::StatusOr<std::shared_ptr<const KeyOpsApplier>>> done) {
        self->Open(ctx, [done = std::move(done)](absl::StatusOr<std::shared_ptr<const ShardMap>> map) mutable {
          if (!map.ok()) return done(map.status());
          done(std::make_shared<const HopscotchApplier>(*map));
        });
      });
  UpdateDispatch* updates = table->updates_.get();
  if (absl::Status s = msgRegisterHandler(
          host, options.identity.update_msg,
          [updates](Context& ctx, const Message& m) { updates->OnUpdate(ctx, m); }, options.identity.name);
      !s.ok()) {
    return s;
  }
  return table;
}

TableHost::TableHost(TableOptions options, std::unique_ptr<ShardCatalog> catalog)
    : options_(std::move(options)), catalog_(std::move(catalog)) {}

void TableHost::CreateShards(Context& ctx, Done<absl::Status> done) { catalog_->CreateShards(ctx, std::move(done)); }

void TableHost::Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const ShardMap>>> done) {
  std::shared_ptr<const ShardMap> map;
  {
    MutexLock lock(&mu_);
    map = map_;
  }
  if (map != nullptr) {
    ctx.Defer([map, done = std::move(done)]() mutable { done(map); });
    return;
  }
  catalog_->Open(ctx, [this, done = std::move(done)](absl::StatusOr<std::shared_ptr<const ShardList>> shards) mutable {
    if (!shards.ok()) return done(shards.status());
    absl::StatusOr<ShardMap> built = ShardMap::Create(options_.layout, **shards);
    if (!built.ok()) return done(built.status());
    done(Adopt(std::make_shared<const ShardMap>(std::move(*built))));
  });
}

std::shared_ptr<const ShardMap> TableHost::Adopt(std::shared_ptr<const ShardMap> map) {
  MutexLock lock(&mu_);
  if (map_ == nullptr) map_ = std::move(map);
  return map_;  // every thread uses the same map
}

}  // namespace farm::kv
