#include "kv/chained/chained_host.h"

#include <algorithm>
#include <utility>

#include "farm/api/wire.h"
#include "kv/chained/chained_ops.h"

namespace farm::kv::chained {

ShardFormat ChainedFormat(const BucketLayout& layout) {
  ShardFormat f;
  f.format = kChainedDirectoryFormat;
  WireWriter w(&f.params);
  w.Put<uint32_t>(layout.slots_per_bucket);
  w.Put<uint32_t>(layout.inline_key_bytes);
  w.Put<uint32_t>(layout.inline_value_bytes);
  return f;
}

absl::StatusOr<std::unique_ptr<ChainedHost>> ChainedHost::Install(Host& host, ChainedOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  if (!(options.expansion.max_load > 0)) return absl::InvalidArgumentError("chained: max_load must be > 0");
  ShardCatalogOptions catalog;
  catalog.identity = options.identity;
  catalog.format = ChainedFormat(options.layout);
  catalog.object_bytes = options.layout.bucket_bytes();
  catalog.objects_per_node = std::max<uint64_t>(2, options.buckets_per_node + 1);
  absl::StatusOr<std::unique_ptr<ShardCatalog>> installed = ShardCatalog::Install(host, std::move(catalog));
  if (!installed.ok()) return installed.status();
  std::unique_ptr<ChainedHost> table(new ChainedHost(std::move(options), std::move(*installed)));
  ChainedHost* self = table.get();
  table->updates_ = std::make_unique<UpdateDispatch>(
      host.thread_count(),
      [self](Context& ctx, Done<absl::StatusOr<std::shared_ptr<const KeyOpsApplier>>> done) {
        self->Open(ctx, [self, done = std::move(done)](absl::StatusOr<ChainedTable> t) mutable {
          if (!t.ok()) return done(t.status());
          Expander* expander = self->expander();
          done(std::make_shared<const ChainedApplier>(
              *t, [expander](Context& c, uint32_t partition, int delta) { expander->Note(c, partition, delta); }));
        });
      });
  UpdateDispatch* updates = table->updates_.get();
  if (absl::Status s = msgRegisterHandler(
          host, table->options_.identity.update_msg,
          [updates](Context& ctx, const Message& m) { updates->OnUpdate(ctx, m); }, table->options_.identity.name);
      !s.ok()) {
    return s;
  }
  return table;
}

ChainedHost::~ChainedHost() {
  // The expansions' coroutines use the Expander until they end.
  if (Expander* expander = this->expander(); expander != nullptr) expander->Stop();
}

void ChainedHost::Open(Context& ctx, Done<absl::StatusOr<ChainedTable>> done) {
  ChainedTable table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  if (table.map != nullptr) {
    ctx.Defer([table, done = std::move(done)]() mutable { done(table); });
    return;
  }
  catalog_->Open(ctx, [this, done = std::move(done)](absl::StatusOr<std::shared_ptr<const ShardList>> shards) mutable {
    if (!shards.ok()) return done(shards.status());
    absl::StatusOr<PartitionMap> map = PartitionMap::Create(options_.layout, **shards);
    if (!map.ok()) return done(map.status());
    done(Adopt(std::make_shared<const PartitionMap>(std::move(*map))));
  });
}

ChainedTable ChainedHost::Adopt(std::shared_ptr<const PartitionMap> map) {
  MutexLock lock(&mu_);
  if (table_.map == nullptr) {
    table_.map = std::move(map);
    table_.tables = std::make_shared<TableCache>(options_.layout.bucket_bytes());
    expander_ = std::make_unique<Expander>(table_, options_.expansion);
  }
  return table_;
}

Expander* ChainedHost::expander() const {
  MutexLock lock(&mu_);
  return expander_.get();
}

}  // namespace farm::kv::chained
