#include "kv/cuckoo/cuckoo_client.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "farm/api/coro.h"
#include "farm/api/wire.h"
#include "kv/cuckoo/cuckoo_txn.h"

namespace farm::kv::cuckoo {
namespace {

constexpr uint32_t kScanReadBytes = 64 * 1024;

uint64_t StoredEstimate(uint64_t payload) { return (objStoredBytes(payload) + 15) / 16 * 16; }

// Every index object (kScanReadBytes per READ), and the header of each DTE named.
Task<absl::StatusOr<TableScan>> ScanTable(Context& ctx, std::shared_ptr<const CuckooMap> map) {
  TableScan scan;
  scan.index_slots = map->index_slots();
  for (const NodeTables& node : map->nodes()) {
    for (const RawPtr& object : node.index) scan.memory_bytes += StoredEstimate(object.size);
    for (const ClassTable& c : node.data) {
      for (const RawPtr& object : c.objects) scan.memory_bytes += StoredEstimate(object.size);
    }
    for (const RawPtr& object : node.index) {
      for (uint32_t offset = 0; offset < object.size; offset += kScanReadBytes) {
        const uint32_t length = std::min(kScanReadBytes, object.size - offset);
        absl::StatusOr<RawCopy> words = co_await RawRead(ctx, object, offset, length);
        if (!words.ok()) co_return words.status();
        for (uint32_t w = 0; w + 8 <= length; w += 8) {
          const uint64_t ite = LoadLe<uint64_t>(words->data.data() + w);
          if (ite == 0) continue;
          ++scan.pairs;
          const EntryRef ref = DecodeIte(ite);
          if (ref.table >= map->nodes().size()) continue;
          const RawLocation at = map->Entry(ref);
          absl::StatusOr<RawCopy> header =
              co_await RawRead(ctx, at.object, at.offset, kEntryHeaderBytes);
          if (!header.ok()) co_return header.status();
          if (StateVersion(LoadLe<uint64_t>(header->data.data())) != ref.version) continue;
          const uint64_t lengths = LoadLe<uint64_t>(header->data.data() + 8);
          scan.pair_bytes += (lengths >> 32) + (lengths & 0xffffffffu);
        }
      }
    }
  }
  // The capacity in pairs (the index is index_factor times larger: cuckoo_host.h).
  for (const NodeTables& node : map->nodes()) scan.bucket_slots += node.pairs;
  scan.pairs_in_buckets = scan.pairs;
  co_return scan;
}

}  // namespace

CuckooClient::CuckooClient(Context& ctx, std::shared_ptr<const CuckooMap> map,
                           const std::vector<SliceRef>& slices, CuckooLimits limits)
    : ctx_(ctx), map_(std::move(map)), ops_(ctx, *map_, slices, limits) {}

void CuckooClient::Get(absl::string_view key, GetDone done) {
  if (!KeysWithinLimit(ctx_, key, done)) return;
  Spawn(ops_.Get(std::string(key)),
        [done = std::move(done)](absl::StatusOr<std::optional<std::string>> r) mutable {
          if (!r.ok()) return done(r.status());
          if (!r->has_value()) return done(std::optional<absl::string_view>());
          done(std::optional<absl::string_view>(**r));
        });
}

void CuckooClient::MultiGet(absl::Span<const std::string> keys, MultiGetDone done) {
  struct Gather {
    std::vector<std::optional<std::string>> values;
    absl::Status first_error;
    size_t left = 0;
    MultiGetDone done;
  };
  if (!KeysWithinLimit(ctx_, keys, done)) return;
  auto gather = std::make_shared<Gather>();
  gather->values.resize(keys.size());
  gather->left = keys.size();
  gather->done = std::move(done);
  if (keys.empty()) {
    ctx_.Defer([gather]() mutable { gather->done(std::move(gather->values)); });
    return;
  }
  for (size_t i = 0; i < keys.size(); ++i) {
    Spawn(ops_.Get(keys[i]), [gather, i](absl::StatusOr<std::optional<std::string>> r) {
      if (!r.ok()) {
        if (gather->first_error.ok()) gather->first_error = r.status();
      } else {
        gather->values[i] = std::move(*r);
      }
      if (--gather->left > 0) return;
      if (!gather->first_error.ok()) return gather->done(gather->first_error);
      gather->done(std::move(gather->values));
    });
  }
}

void CuckooClient::Update(OpKind kind, absl::string_view key, absl::string_view value,
                          int64_t delta, Done<absl::StatusOr<KeyOpResult>> done) {
  if (!UpdateWithinLimits(ctx_, key, value, done)) return;
  Spawn(ops_.Update(kind, std::string(key), std::string(value), delta), std::move(done));
}

void CuckooClient::Scan(Done<absl::StatusOr<TableScan>> done) {
  Spawn(ScanTable(ctx_, map_), std::move(done));
}

std::unique_ptr<StoreTxn> CuckooClient::BeginTxn() { return std::make_unique<CuckooTxn>(ctx_); }

}  // namespace farm::kv::cuckoo
