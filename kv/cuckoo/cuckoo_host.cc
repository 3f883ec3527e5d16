#include "kv/cuckoo/cuckoo_host.h"

#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"

namespace farm::kv::cuckoo {
namespace {

// co_await of a continuation-style call: start(done) -> the value done was given.
template <typename T>
class CallbackAwait {
 public:
  explicit CallbackAwait(absl::AnyInvocable<void(Done<T>)> start) : start_(std::move(start)) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    start_([this, h](T r) mutable {
      result_.emplace(std::move(r));
      h.resume();
    });
  }
  T await_resume() { return std::move(*result_); }

 private:
  absl::AnyInvocable<void(Done<T>)> start_;
  std::optional<T> result_;
};

ShardFormat CuckooFormat(const CuckooOptions& o) {
  ShardFormat f;
  f.format = kCuckooDirectoryFormat;
  WireWriter w(&f.params);
  w.Put<uint32_t>(o.ways).Put<uint32_t>(o.index_factor);
  return f;
}

// Every owner's directory object: object 0 of its lowest shard.
std::vector<FatPtr> DirectoryObjects(const std::vector<Shard>& shards) {
  std::vector<Shard> sorted = shards;
  std::sort(sorted.begin(), sorted.end(),
            [](const Shard& a, const Shard& b) { return a.first < b.first; });
  std::vector<FatPtr> out;
  std::vector<NodeId> seen;
  for (const Shard& s : sorted) {
    if (std::find(seen.begin(), seen.end(), s.owner) != seen.end()) continue;
    seen.push_back(s.owner);
    out.push_back(FatPtr{s.first, kDirectoryObjectBytes, s.incarnation});
  }
  return out;
}

Task<absl::StatusOr<std::vector<RawPtr>>> AllocateRun(Context& ctx, uint64_t bytes) {
  std::vector<RawPtr> objects;
  while (bytes > 0) {
    const uint32_t size = static_cast<uint32_t>(std::min<uint64_t>(bytes, kDataObjectBytes));
    absl::StatusOr<RawPtr> p;
    for (int attempt = 0; attempt < 20; ++attempt) {
      p = co_await RawAlloc(ctx, size, Addr());
      if (p.ok() || p.status().code() != absl::StatusCode::kAborted) break;
    }
    if (!p.ok()) co_return p.status();
    objects.push_back(*p);
    bytes -= size;
  }
  co_return objects;
}

}  // namespace

absl::Status CuckooOptions::Validate() const {
  if (ways < 2 || ways > kMaxWays)
    return absl::InvalidArgumentError(absl::StrCat("cuckoo: N=", ways, " (2 or 3)"));
  if (index_factor < 1 || index_factor > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuckoo: index factor ", index_factor, " (1 .. 16)"));
  }
  if (pairs_per_node == 0) return absl::InvalidArgumentError("cuckoo: no capacity");
  if (limits.max_displacement < 1 || limits.max_displacement > 16) {
    return absl::InvalidArgumentError(
        absl::StrCat("cuckoo: D=", limits.max_displacement, " (1 .. 16)"));
  }
  for (uint32_t c = 0; c < kSizeClasses; ++c) {
    if (EntriesPerThread(c) == 0 || EntriesPerThread(c) > kMaxEntryIndex) {
      return absl::InvalidArgumentError(absl::StrCat(
          "cuckoo: ", EntriesPerThread(c), " entries of ", kClassBytes[c], " bytes per thread"));
    }
  }
  return absl::OkStatus();
}

uint32_t CuckooOptions::EntriesPerThread(uint32_t size_class) const {
  switch (size_class) {
    case 0:
      return small_entries_per_thread
                 ? small_entries_per_thread
                 : static_cast<uint32_t>(pairs_per_node + pairs_per_node / 4 + 64);
    case 1:
      return entries_1k_per_thread;
    case 2:
      return entries_8k_per_thread;
    default:
      return entries_64k_per_thread;
  }
}

absl::StatusOr<std::unique_ptr<CuckooHost>> CuckooHost::Install(Host& host, CuckooOptions options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  ShardCatalogOptions catalog;
  catalog.identity = options.identity;
  catalog.format = CuckooFormat(options);
  catalog.object_bytes = kDirectoryObjectBytes;
  catalog.objects_per_node = 2;
  absl::StatusOr<std::unique_ptr<ShardCatalog>> installed =
      ShardCatalog::Install(host, std::move(catalog));
  if (!installed.ok()) return installed.status();
  return std::unique_ptr<CuckooHost>(
      new CuckooHost(host, std::move(options), std::move(*installed)));
}

void CuckooHost::CreateShards(Context& ctx, Done<absl::Status> done) {
  Spawn(Create(ctx), std::move(done));
}

Task<absl::StatusOr<NodeTables>> CuckooHost::AllocateTables(Context& ctx) {
  NodeTables t;
  t.owner = ctx.self();
  t.threads = static_cast<uint32_t>(host_.thread_count());
  t.guest_slices = options_.guest_slices;
  absl::StatusOr<RawPtr> claims = co_await RawAlloc(ctx, 64, Addr());
  if (!claims.ok()) co_return claims.status();
  t.claims = *claims;
  t.pairs = options_.pairs_per_node;
  t.index_slots = options_.pairs_per_node * options_.index_factor;
  absl::StatusOr<std::vector<RawPtr>> index = co_await AllocateRun(ctx, t.index_slots * 8);
  if (!index.ok()) co_return index.status();
  t.index = std::move(*index);
  for (uint32_t c = 0; c < kSizeClasses; ++c) {
    ClassTable& table = t.data[c];
    table.per_thread = options_.EntriesPerThread(c);
    table.entries_per_object = std::max<uint32_t>(1, kDataObjectBytes / kClassBytes[c]);
    const uint64_t entries = uint64_t{table.per_thread} * t.slices();
    if (entries > kMaxEntryIndex) {
      co_return absl::InvalidArgumentError(
          absl::StrCat("cuckoo: ", entries, " data entries of ", kClassBytes[c],
                       " bytes on one node (at most ", kMaxEntryIndex, ")"));
    }
    const uint64_t objects = (entries + table.entries_per_object - 1) / table.entries_per_object;
    // Every object of a class is entries_per_object entries long (the last one too).
    absl::StatusOr<std::vector<RawPtr>> run =
        co_await AllocateRun(ctx, objects * table.entries_per_object * kClassBytes[c]);
    if (!run.ok()) co_return run.status();
    table.objects = std::move(*run);
  }
  if (EncodeNodeTables(t).size() > kDirectoryObjectBytes) {
    co_return absl::InvalidArgumentError(
        "cuckoo: this node's tables need a larger directory object");
  }
  co_return t;
}

Task<absl::Status> CuckooHost::Publish(Context& ctx, const NodeTables& tables) {
  const std::vector<FatPtr> mine = DirectoryObjects(catalog_->local_shards());
  if (mine.empty()) co_return absl::InternalError("cuckoo: no catalog object on this node");
  const std::string bytes = EncodeNodeTables(tables);
  absl::Status committed;
  for (int attempt = 0; attempt < 20; ++attempt) {
    TxHandle tx = txCreate(ctx);
    absl::StatusOr<ObjBuf*> object = co_await TxRead(*tx, mine[0]);
    if (!object.ok()) co_return object.status();
    std::span<char> data = (*object)->data();
    std::memset(data.data(), 0, data.size());
    std::memcpy(data.data(), bytes.data(), bytes.size());
    if (absl::Status s = txWrite(*tx, *object); !s.ok()) co_return s;
    committed = co_await TxCommit(*tx);
    if (committed.code() != absl::StatusCode::kAborted) break;
  }
  co_return committed;
}

Task<absl::Status> CuckooHost::Create(Context& ctx) {
  if (!tables_) {
    absl::StatusOr<NodeTables> t = co_await AllocateTables(ctx);
    if (!t.ok()) co_return t.status();
    tables_ = std::move(*t);
  }
  if (!catalog_created_) {
    absl::Status created = co_await CallbackAwait<absl::Status>(
        [this, &ctx](Done<absl::Status> d) { catalog_->CreateShards(ctx, std::move(d)); });
    if (!created.ok()) co_return created;
    catalog_created_ = true;
  }
  if (!published_) {
    if (absl::Status s = co_await Publish(ctx, *tables_); !s.ok()) co_return s;
    published_ = true;
  }
  co_return absl::OkStatus();
}

void CuckooHost::Open(Context& ctx, Done<absl::StatusOr<std::shared_ptr<const CuckooMap>>> done) {
  std::shared_ptr<const CuckooMap> map;
  {
    MutexLock lock(&mu_);
    map = map_;
  }
  if (map != nullptr) {
    ctx.Defer([map, done = std::move(done)]() mutable { done(map); });
    return;
  }
  Spawn(Load(ctx), std::move(done));
}

Task<absl::StatusOr<std::shared_ptr<const CuckooMap>>> CuckooHost::Load(Context& ctx) {
  absl::StatusOr<std::shared_ptr<const ShardList>> shards =
      co_await CallbackAwait<absl::StatusOr<std::shared_ptr<const ShardList>>>(
          [this, &ctx](Done<absl::StatusOr<std::shared_ptr<const ShardList>>> d) {
            catalog_->Open(ctx, std::move(d));
          });
  if (!shards.ok()) co_return shards.status();
  const absl::Time deadline = absl::Now() + ShardCatalog::kOpenTimeout;
  std::vector<NodeTables> nodes;
  for (const FatPtr& directory : DirectoryObjects(**shards)) {
    while (true) {
      LockFreeOp op = lockFreeStart(ctx);
      absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, directory);
      op.End();
      if (!copy.ok()) co_return copy.status();
      absl::StatusOr<NodeTables> t = DecodeNodeTables(copy->data);
      if (t.ok()) {
        nodes.push_back(std::move(*t));
        break;
      }
      if (absl::Now() > deadline)
        co_return absl::DeadlineExceededError(absl::StrCat(
            "cuckoo: a member's directory was not written in time: ", t.status().message()));
      co_await SleepFor(ctx, absl::Milliseconds(20));  // its CreateShards is still running
    }
  }
  absl::StatusOr<CuckooMap> map = CuckooMap::Create(std::move(nodes), options_.ways);
  if (!map.ok()) co_return map.status();
  co_return Adopt(std::make_shared<const CuckooMap>(std::move(*map)));
}

Task<absl::StatusOr<std::vector<SliceRef>>> CuckooHost::ClaimSlices(
    Context& ctx, std::shared_ptr<const CuckooMap> map, size_t threads) {
  std::vector<SliceRef> slices;
  const int own = map->TableOf(ctx.self());
  if (own >= 0) {
    slices.push_back(SliceRef{own, static_cast<uint32_t>(ctx.thread_index())});
    co_return slices;
  }
  // The member's threads share the tables out: thread t asks the tables j with
  // j % threads == t (every table when it is the only thread), or, with more threads than
  // tables, table t % n.
  const size_t n = map->nodes().size();
  const size_t t = ctx.thread_index();
  threads = std::max<size_t>(threads, 1);
  for (size_t table = 0; table < n; ++table) {
    const bool mine = threads <= n ? table % threads == t % threads : table == t % n;
    const NodeTables& node = map->nodes()[table];
    if (!mine || node.guest_slices == 0) continue;
    absl::StatusOr<uint64_t> claimed = co_await RawFetchAdd64(ctx, node.claims, 0, 1);
    if (!claimed.ok()) co_return claimed.status();
    if (*claimed < node.guest_slices) {
      slices.push_back(
          SliceRef{static_cast<int>(table), node.threads + static_cast<uint32_t>(*claimed)});
    }
  }
  co_return slices;  // none: its updates answer ResourceExhausted (WriteEntry)
}

std::shared_ptr<const CuckooMap> CuckooHost::Adopt(std::shared_ptr<const CuckooMap> map) {
  MutexLock lock(&mu_);
  if (map_ == nullptr) map_ = std::move(map);
  return map_;
}

}  // namespace farm::kv::cuckoo
