#include "kv/chained/chained_ops.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kv/layout.h"
#include "kv/tx_operation.h"

namespace farm::kv::chained {
namespace {

// One bucket as a transaction read it: its head, its chain's blocks and its pairs'
// slots (copies, in chain order).
struct TxBucket {
  ObjBuf* head = nullptr;
  std::vector<ObjBuf*> blocks;
  std::vector<std::string> slots;
};

Task<absl::StatusOr<std::shared_ptr<const BucketTable>>> TableInTx(Tx& tx, const ChainedTable& table,
                                                                   const Partition& partition, const TableRef& ref) {
  if (ref.directory.is_null()) co_return partition.initial;
  if (std::shared_ptr<const BucketTable> cached = table.tables->Find(ref.directory)) co_return cached;
  absl::StatusOr<ObjBuf*> dir = co_await TxRead(tx, ref.directory);
  if (!dir.ok()) co_return Retryable(dir.status());
  co_return table.tables->Add(ref.directory, (*dir)->data());
}

// The head's chain and pairs.
Task<absl::StatusOr<TxBucket>> ReadChainInTx(Tx& tx, const BucketLayout& layout, ObjBuf* head) {
  TxBucket bucket;
  bucket.head = head;
  ObjBuf* object = head;
  while (true) {
    if (absl::Status s = CheckBucket(object->data(), layout); !s.ok()) co_return s;
    if (object->data()[0] != 0) {
      for (uint32_t i = 0; i < layout.slots_per_bucket; ++i) {
        std::span<const char> slot = BucketSlotAt(std::as_const(*object).data(), layout, i);
        if (KindOf(slot) == SlotKind::kEmpty) break;
        bucket.slots.emplace_back(slot.data(), slot.size());
      }
    }
    const FatPtr next = object->data()[0] == 0 ? FatPtr{} : NextBlock(std::as_const(*object).data());
    if (next.is_null()) break;
    if (bucket.blocks.size() > (1u << 16)) co_return absl::InternalError("chained: a chain that does not end");
    absl::StatusOr<ObjBuf*> block = co_await TxRead(tx, next);
    if (!block.ok()) co_return Retryable(block.status());
    bucket.blocks.push_back(*block);
    object = *block;
  }
  co_return bucket;
}

// Rewrites a bucket as `slots` packed into its head and as many blocks as needed
// (reusing its blocks, allocating new ones next to the head, freeing the rest), with
// `flags` on the head (invariants 3 and 4).
Task<absl::Status> WriteChainInTx(Tx& tx, const BucketLayout& layout, ObjBuf* head, std::vector<ObjBuf*> blocks,
                                  const std::vector<std::string>& slots, uint8_t flags) {
  const uint32_t s = layout.slots_per_bucket;
  const size_t need = slots.size() <= s ? 0 : (slots.size() - s + s - 1) / s;
  while (blocks.size() > need) {
    if (absl::Status st = txFree(tx, blocks.back()->ptr()); !st.ok()) co_return st;
    blocks.pop_back();
  }
  while (blocks.size() < need) {
    absl::StatusOr<ObjBuf*> block = co_await TxAlloc(tx, layout.bucket_bytes(), head->ptr().addr);
    if (!block.ok()) co_return block.status();
    blocks.push_back(*block);
  }
  size_t next_slot = 0;
  for (size_t j = 0; j <= blocks.size(); ++j) {
    ObjBuf* object = j == 0 ? head : blocks[j - 1];
    const FatPtr next = j < blocks.size() ? blocks[j]->ptr() : FatPtr{};
    std::span<char> data = object->data();
    WriteBucketHeader(data, j == 0 ? flags : 0, j == 0 ? static_cast<uint32_t>(slots.size()) : 0, next);
    for (uint32_t i = 0; i < s; ++i) {
      std::span<char> slot = BucketSlotAt(data, layout, i);
      if (next_slot < slots.size()) {
        std::memcpy(slot.data(), slots[next_slot].data(), slot.size());
        ++next_slot;
      } else {
        ClearSlot(slot);
      }
    }
    if (absl::Status st = txWrite(tx, object); !st.ok()) co_return st;
  }
  co_return absl::OkStatus();
}

// The key's place among `bucket.slots` (or none) and its value.
struct Found {
  std::optional<size_t> at;
  std::optional<std::string> value;
  FatPtr value_object;  // out of line: the object holding it
};

Task<absl::StatusOr<Found>> FindInTx(Tx& tx, const TxBucket& bucket, absl::string_view key, uint64_t hash) {
  Found f;
  for (size_t i = 0; i < bucket.slots.size(); ++i) {
    std::span<const char> slot(bucket.slots[i].data(), bucket.slots[i].size());
    if (KindOf(slot) == SlotKind::kInline) {
      if (InlineKey(slot) != key) continue;
      f.at = i;
      f.value = std::string(InlineValue(slot));
      co_return f;
    }
    if (OutOfLineHash(slot) != hash) continue;
    const FatPtr value = OutOfLineValue(slot);
    absl::StatusOr<ObjBuf*> object = co_await TxRead(tx, value);
    if (!object.ok()) co_return Retryable(object.status());
    absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv =
        ParseValueObject(std::as_const(**object).data());
    if (!kv.ok()) co_return kv.status();
    if (kv->first != key) continue;
    f.at = i;
    f.value = std::string(kv->second);
    f.value_object = value;
    co_return f;
  }
  co_return f;
}

// The key's bucket (invariant 1) as the transaction sees it.
Task<absl::StatusOr<TxBucket>> KeyBucketInTx(Tx& tx, const ChainedTable& table, uint64_t hash) {
  const uint32_t p = table.map->PartitionOf(hash);
  absl::StatusOr<TxTables> tables = co_await ReadTablesInTx(tx, table, p);
  if (!tables.ok()) co_return tables.status();
  absl::StatusOr<ObjBuf*> head =
      co_await TxRead(tx, tables->current->Bucket(BucketIndex(hash, tables->current->buckets())));
  if (!head.ok()) co_return Retryable(head.status());
  if (IsMoved(std::as_const(**head).data())) {
    // The root was read before an expansion started and the head after it moved it: the
    // transaction's reads are not yet validated, and its commit would fail.
    if (tables->next == nullptr) co_return absl::AbortedError("chained: the table expanded during the transaction");
    head = co_await TxRead(tx, tables->next->Bucket(BucketIndex(hash, tables->next->buckets())));
    if (!head.ok()) co_return Retryable(head.status());
    if (IsMoved(std::as_const(**head).data())) {
      co_return absl::AbortedError("chained: the table expanded again during the transaction");
    }
  }
  co_return co_await ReadChainInTx(tx, table.map->layout(), *head);
}

}  // namespace

Task<absl::StatusOr<TxTables>> ReadTablesInTx(Tx& tx, const ChainedTable& table, uint32_t partition) {
  const Partition& part = table.map->partition(partition);
  TxTables t;
  absl::StatusOr<ObjBuf*> root = co_await TxRead(tx, part.root);
  if (!root.ok()) co_return Retryable(root.status());
  t.root = *root;
  t.state = ReadRoot(std::as_const(*t.root).data());
  absl::StatusOr<std::shared_ptr<const BucketTable>> current = co_await TableInTx(tx, table, part, t.state.current);
  if (!current.ok()) co_return current.status();
  t.current = *current;
  if (t.state.expanding()) {
    absl::StatusOr<std::shared_ptr<const BucketTable>> next = co_await TableInTx(tx, table, part, t.state.next);
    if (!next.ok()) co_return next.status();
    t.next = *next;
    if (t.next->buckets() != 2 * t.current->buckets()) {
      co_return absl::InternalError("chained: the next table is not twice the current one");
    }
  }
  co_return t;
}

Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ChainedTable& table, std::string key,
                                                          std::vector<KeyOp> ops) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  const BucketLayout& layout = table.map->layout();
  const uint64_t hash = HashKey(key);
  absl::StatusOr<TxBucket> bucket = co_await KeyBucketInTx(tx, table, hash);
  if (!bucket.ok()) co_return bucket.status();
  absl::StatusOr<Found> found = co_await FindInTx(tx, *bucket, key, hash);
  if (!found.ok()) co_return found.status();
  std::optional<std::string> value = found->value;
  std::vector<KeyOpResult> results;
  if (!ApplyOpsToValue(value, ops, results)) co_return results;
  if (!value.has_value() && !found->at.has_value()) co_return results;  // e.g. a put then a remove
  if (!found->value_object.is_null()) {
    if (absl::Status s = txFree(tx, found->value_object); !s.ok()) co_return s;
  }
  std::vector<std::string>& slots = bucket->slots;
  if (!value.has_value()) {
    slots.erase(slots.begin() + static_cast<ptrdiff_t>(*found->at));
  } else {
    std::string slot(layout.slot_bytes(), '\0');
    std::span<char> s(slot.data(), slot.size());
    if (layout.FitsInline(key.size(), value->size())) {
      WriteInline(s, key, *value);
    } else {
      absl::StatusOr<ObjBuf*> object =
          co_await TxAlloc(tx, ValueObjectBytes(key, *value), bucket->head->ptr().addr);
      if (!object.ok()) co_return object.status();
      WriteValueObject((*object)->data(), key, *value);
      if (absl::Status st = txWrite(tx, *object); !st.ok()) co_return st;
      WriteOutOfLine(s, hash, (*object)->ptr());
    }
    if (found->at.has_value()) {
      slots[*found->at] = std::move(slot);
    } else {
      slots.push_back(std::move(slot));
    }
  }
  if (absl::Status s = co_await WriteChainInTx(tx, layout, bucket->head, std::move(bucket->blocks), slots, 0);
      !s.ok()) {
    co_return s;
  }
  co_return results;
}

Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ChainedTable& table, std::string key) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  const uint64_t hash = HashKey(key);
  absl::StatusOr<TxBucket> bucket = co_await KeyBucketInTx(tx, table, hash);
  if (!bucket.ok()) co_return bucket.status();
  absl::StatusOr<Found> found = co_await FindInTx(tx, *bucket, key, hash);
  if (!found.ok()) co_return found.status();
  co_return std::move(found->value);
}

Task<absl::StatusOr<bool>> MigrateBucketInTx(Tx& tx, const ChainedTable& table, const TxTables& tables,
                                             uint64_t b) {
  const BucketLayout& layout = table.map->layout();
  if (tables.next == nullptr) co_return absl::FailedPreconditionError("chained: not expanding");
  const uint64_t n = tables.current->buckets();
  absl::StatusOr<ObjBuf*> head = co_await TxRead(tx, tables.current->Bucket(b));
  if (!head.ok()) co_return Retryable(head.status());
  if (IsMoved(std::as_const(**head).data())) co_return false;
  absl::StatusOr<TxBucket> old = co_await ReadChainInTx(tx, layout, *head);
  if (!old.ok()) co_return old.status();
  std::vector<std::string> low;
  std::vector<std::string> high;
  for (std::string& slot : old->slots) {
    const uint64_t to = BucketIndex(SlotHash(std::span<const char>(slot.data(), slot.size())), 2 * n);
    if (to != b && to != b + n) co_return absl::InternalError(absl::StrFormat("chained: a pair of bucket %d in %d", to, b));
    (to == b ? low : high).push_back(std::move(slot));
  }
  const uint64_t targets[2] = {b, b + n};
  for (int half = 0; half < 2; ++half) {
    const uint64_t index = targets[half];
    const std::vector<std::string>* slots = half == 0 ? &low : &high;
    absl::StatusOr<ObjBuf*> target = co_await TxRead(tx, tables.next->Bucket(index));
    if (!target.ok()) co_return Retryable(target.status());
    std::span<const char> data = std::as_const(**target).data();
    if (data[0] != 0 && (IsMoved(data) || ChainPairs(data) != 0 || !NextBlock(data).is_null())) {
      co_return absl::InternalError(absl::StrFormat("chained: next-table bucket %d written before its migration", index));
    }
    if (absl::Status s = co_await WriteChainInTx(tx, layout, *target, {}, *slots, 0); !s.ok()) co_return s;
  }
  if (absl::Status s = co_await WriteChainInTx(tx, layout, old->head, std::move(old->blocks), {}, kMovedFlag);
      !s.ok()) {
    co_return s;
  }
  co_return true;
}

int PairDelta(absl::Span<const KeyOp> ops, absl::Span<const KeyOpResult> results) {
  if (results.empty() || results.size() != ops.size()) return 0;
  const bool before = results[0].existed;
  bool present = before;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!results[i].status.ok()) continue;
    present = ops[i].kind != OpKind::kRemove;
  }
  return int{present} - int{before};
}

Task<absl::StatusOr<size_t>> ChainedApplier::Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                                   uint64_t max_write_bytes) const {
  const ChainedTable& table = table_;
  co_return co_await ApplyKeysInOrder(tx, keys, max_write_bytes, [&tx, &table](std::string key, std::vector<KeyOp> ops) {
    return ApplyToKey(tx, table, std::move(key), std::move(ops));
  });
}

void ChainedApplier::OnCommitted(Context& ctx, absl::string_view key, absl::Span<const KeyOp> ops,
                                 absl::Span<const KeyOpResult> results) const {
  const int delta = PairDelta(ops, results);
  if (delta != 0) committed_(ctx, table_.map->PartitionOf(HashKey(key)), delta);
}

}  // namespace farm::kv::chained
