#include "kv/linear/linear_host.h"

#include <algorithm>
#include <utility>

#include "farm/api/wire.h"
#include "kv/linear/linear_ops.h"

namespace farm::kv::linear {

ShardFormat LinearFormat(const SlotLayout& layout) {
  ShardFormat f;
  f.format = kLinearDirectoryFormat;
  WireWriter w(&f.params);
  w.Put<uint32_t>(layout.slots_per_group);
  w.Put<uint32_t>(layout.inline_key_bytes);
  w.Put<uint32_t>(layout.inline_value_bytes);
  return f;
}

absl::StatusOr<std::unique_ptr<LinearHost>> LinearHost::Install(Host& host, LinearOptions options) {
  if (absl::Status s = options.layout.Validate(); !s.ok()) return s;
  const uint32_t g = options.layout.slots_per_group;
  ShardCatalogOptions catalog;
  catalog.identity = options.identity;
  catalog.format = LinearFormat(options.layout);
  catalog.object_bytes = options.layout.group_bytes();
  catalog.objects_per_node = std::max<uint64_t>(2, (options.slots_per_node + g - 1) / g);
  absl::StatusOr<std::unique_ptr<ShardCatalog>> installed = ShardCatalog::Install(host, std::move(catalog));
  if (!installed.ok()) return installed.status();
  std::unique_ptr<LinearHost> table(new LinearHost(options, std::move(*installed)));
  LinearHost* self = table.get();
  table->updates_ = std::make_unique<UpdateDispatch>(
      host.thread_count(),
      [self](Context& ctx, Done<absl::StatusOr<std::shared_ptr<const KeyOpsApplier>>> done) {
        self->Open(ctx, [done = std::move(done)](absl::StatusOr<std::shared_ptr<const LinearTable>> t) mutable {
          if (!t.ok()) return done(t.status());
          done(std::make_shared<const LinearApplier>((*t)->map));
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

void LinearHost::Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const LinearTable>>> done) {
  std::shared_ptr<const LinearTable> table;
  {
    MutexLock lock(&mu_);
    table = table_;
  }
  if (table != nullptr) {
    ctx.Defer([table, done = std::move(done)]() mutable { done(table); });
    return;
  }
  catalog_->Open(ctx, [this, done = std::move(done)](absl::StatusOr<std::shared_ptr<const ShardList>> shards) mutable {
    if (!shards.ok()) return done(shards.status());
    absl::StatusOr<ProbeMap> map = ProbeMap::Create(options_.layout, **shards);
    if (!map.ok()) return done(map.status());
    done(Adopt(MakeLinearTable(std::make_shared<const ProbeMap>(std::move(*map)), options_.read)));
  });
}

std::shared_ptr<const LinearTable> LinearHost::Adopt(std::shared_ptr<const LinearTable> table) {
  MutexLock lock(&mu_);
  if (table_ == nullptr) table_ = std::move(table);
  return table_;
}

}  // namespace farm::kv::linear
