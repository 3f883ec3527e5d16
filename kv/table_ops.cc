#include "kv/table_ops.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kv/tx_operation.h"

namespace farm::kv {
namespace {

// A chain longer than this is corrupt (a cycle): no table has that many pairs per bucket.
constexpr size_t kMaxChainBlocks = 1 << 20;

struct SlotAt {
  ObjBuf* object = nullptr;
  bool in_bucket = false;
  uint32_t index = 0;
};

struct BucketCopy {
  uint32_t bucket;
  ObjBuf* object;
};

// What a transaction has read of one key's neighbourhood.
struct Neighbourhood {
  Home home;
  uint64_t hash = 0;
  std::vector<BucketCopy> buckets;  // home, home + 1, then buckets probed for displacement
  std::vector<ObjBuf*> chain;       // the home bucket's overflow blocks, in order
  std::optional<SlotAt> at;         // where the key is
  std::optional<std::string> value;
  FatPtr value_object;              // when the pair is out of line
};

std::span<char> SlotOf(const TableLayout& layout, const SlotAt& at) {
  std::span<char> data = at.object->data();
  return at.in_bucket ? BucketSlot(data, layout, at.index) : BlockSlot(data, layout, at.index);
}

uint32_t SlotsIn(const TableLayout& layout, bool bucket) {
  return bucket ? layout.slots_per_bucket() : kSlotsPerBlock;
}

// Is the pair in `slot` the key? Reads an out-of-line value whose hash matches.
Task<absl::StatusOr<bool>> Match(Tx& tx, const TableLayout& layout, SlotAt at, absl::string_view key,
                                 Neighbourhood& n) {
  std::span<const char> slot = SlotOf(layout, at);
  if (absl::Status s = CheckSlot(slot, layout); !s.ok()) co_return s;
  switch (KindOf(slot)) {
    case SlotKind::kEmpty:
      co_return false;
    case SlotKind::kInline:
      if (InlineKey(slot) != key) co_return false;
      n.value = std::string(InlineValue(slot));
      co_return true;
    case SlotKind::kOutOfLine: {
      if (OutOfLineHash(slot) != n.hash) co_return false;
      const FatPtr value = OutOfLineValue(slot);
      absl::StatusOr<ObjBuf*> object = co_await TxRead(tx, value);
      if (!object.ok()) co_return Retryable(object.status());
      absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv =
          ParseValueObject((*object)->data());
      if (!kv.ok()) co_return kv.status();
      if (kv->first != key) co_return false;
      n.value = std::string(kv->second);
      n.value_object = value;
      co_return true;
    }
  }
  co_return false;
}

Task<absl::Status> SearchSlots(Tx& tx, const TableLayout& layout, ObjBuf* object, bool bucket,
                               absl::string_view key, Neighbourhood& n) {
  for (uint32_t i = 0; i < SlotsIn(layout, bucket) && !n.at; ++i) {
    const SlotAt at{object, bucket, i};
    absl::StatusOr<bool> match = co_await Match(tx, layout, at, key, n);
    if (!match.ok()) co_return match.status();
    if (*match) n.at = at;
  }
  co_return absl::OkStatus();
}

// Reads the key's bucket, the next one and the whole overflow chain; finds the key.
Task<absl::Status> Find(Tx& tx, const ShardMap& map, absl::string_view key, Neighbourhood& n) {
  const TableLayout& layout = map.layout();
  n.hash = HashKey(key);
  n.home = map.Locate(n.hash);
  for (uint32_t i = 0; i < 2; ++i) {
    absl::StatusOr<ObjBuf*> b = co_await TxRead(tx, map.Bucket(n.home.shard, n.home.bucket + i));
    if (!b.ok()) co_return b.status();
    n.buckets.push_back(BucketCopy{n.home.bucket + i, *b});
  }
  for (uint32_t i = 0; i < 2; ++i) {
    if (absl::Status s = co_await SearchSlots(tx, layout, n.buckets[i].object, true, key, n); !s.ok()) {
      co_return s;
    }
  }
  FatPtr next = OverflowOf(n.buckets[0].object->data(), layout);
  while (!next.is_null()) {
    if (n.chain.size() >= kMaxChainBlocks) {
      co_return absl::InternalError("an overflow chain is cyclic or impossibly long");
    }
    absl::StatusOr<ObjBuf*> block = co_await TxRead(tx, next);
    if (!block.ok()) co_return Retryable(block.status());
    n.chain.push_back(*block);
    if (absl::Status s = co_await SearchSlots(tx, layout, *block, false, key, n); !s.ok()) co_return s;
    next = NextOf((*block)->data(), layout);
  }
  co_return absl::OkStatus();
}

class Writer {
 public:
  Writer(Tx& tx, const ShardMap& map, BucketWrites& writes, Neighbourhood& n)
      : tx_(tx), map_(map), layout_(map.layout()), writes_(writes), n_(n) {}

  // Stores key = value where the key is, or in a free place (invariant 1).
  Task<absl::Status> Store(absl::string_view key, absl::string_view value) {
    if (n_.at) {
      if (!n_.value_object.is_null()) {
        if (absl::Status s = txFree(tx_, n_.value_object); !s.ok()) co_return s;
      }
      co_return co_await WritePair(*n_.at, key, value);
    }
    for (uint32_t b = 0; b < 2; ++b) {
      if (std::optional<SlotAt> free = EmptySlot(n_.buckets[b].object, true)) {
        co_return co_await WritePair(*free, key, value);
      }
    }
    absl::StatusOr<std::optional<SlotAt>> displaced = co_await Displace();
    if (!displaced.ok()) co_return displaced.status();
    if (*displaced) co_return co_await WritePair(**displaced, key, value);
    co_return co_await Append(key, value);
  }

  // Removes the key (present) and collapses the chain (invariants 2 and 4): the chain's
  // last pair fills the hole, and every block after the hole's place gets a new name.
  absl::Status Erase() {
    if (!n_.value_object.is_null()) {
      if (absl::Status s = txFree(tx_, n_.value_object); !s.ok()) return s;
    }
    const SlotAt at = *n_.at;
    if (n_.chain.empty()) {
      ClearSlot(SlotOf(layout_, at));
      return Written(at.object);
    }
    ObjBuf* last = n_.chain.back();
    std::optional<uint32_t> tail;
    for (uint32_t i = kSlotsPerBlock; i > 0; --i) {
      if (KindOf(BlockSlot(last->data(), layout_, i - 1)) != SlotKind::kEmpty) {
        tail = i - 1;
        break;
      }
    }
    if (!tail) return absl::InternalError("an overflow chain ends in an empty block");
    const SlotAt moved{last, false, *tail};
    if (at.object != moved.object || at.index != moved.index) {
      std::span<char> to = SlotOf(layout_, at);
      std::span<const char> from = SlotOf(layout_, moved);
      std::copy(from.begin(), from.end(), to.begin());
      if (absl::Status s = Written(at.object); !s.ok()) return s;
    }
    ClearSlot(SlotOf(layout_, moved));
    // Blocks after the hole's place, up to and including the last (invariant 4).
    size_t first_after_hole = 0;
    if (!at.in_bucket) {
      first_after_hole = std::find(n_.chain.begin(), n_.chain.end(), at.object) - n_.chain.begin() + 1;
    }
    const size_t last_index = n_.chain.size() - 1;
    for (size_t i = std::min(first_after_hole, last_index); i <= last_index; ++i) {
      ObjBuf* block = n_.chain[i];
      FatPtr name;  // null: the last block, emptied, is freed
      if (i == last_index && *tail == 0) {
        if (absl::Status s = txFree(tx_, block->ptr()); !s.ok()) return s;
      } else {
        absl::StatusOr<FatPtr> renamed = Rename(block);
        if (!renamed.ok()) return renamed.status();
        name = *renamed;
      }
      // The block's predecessor: the home bucket or the previous block.
      ObjBuf* pred = i == 0 ? n_.buckets[0].object : n_.chain[i - 1];
      if (i == 0) {
        SetOverflow(pred->data(), name);
      } else {
        SetNext(pred->data(), name);
      }
      if (absl::Status s = Written(pred); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  // Gives `block` a new incarnation at commit and returns the pointer that names it
  // then (a block this transaction allocated keeps its name; one it renamed already,
  // in an earlier update of its batch, keeps the new one).
  absl::StatusOr<FatPtr> Rename(ObjBuf* block) {
    if (absl::Status s = objIncrementIncarnation(tx_, block); !s.ok()) return s;
    return objCommittedPtr(*block);
  }

  std::optional<SlotAt> EmptySlot(ObjBuf* object, bool bucket) const {
    for (uint32_t i = 0; i < SlotsIn(layout_, bucket); ++i) {
      const SlotAt at{object, bucket, i};
      if (KindOf(SlotOf(layout_, at)) == SlotKind::kEmpty) return at;
    }
    return std::nullopt;
  }

  // tx.Write, remembering buckets for the joint versions.
  absl::Status Written(ObjBuf* object) {
    for (const BucketCopy& b : n_.buckets) {
      if (b.object == object) writes_.Add(n_.home.shard, b.bucket, object);
    }
    return txWrite(tx_, object);
  }

  Task<absl::Status> WritePair(SlotAt at, absl::string_view key, absl::string_view value) {
    if (layout_.FitsInline(key.size(), value.size())) {
      WriteInline(SlotOf(layout_, at), key, value);
      co_return Written(at.object);
    }
    // Out of line, next to the bucket (collocated with its shard).
    absl::StatusOr<ObjBuf*> object =
        co_await TxAlloc(tx_, ValueObjectBytes(key, value), n_.buckets[0].object->ptr().addr);
    if (!object.ok()) co_return object.status();
    WriteValueObject((*object)->data(), key, value);
    if (absl::Status s = txWrite(tx_, *object); !s.ok()) co_return s;
    WriteOutOfLine(SlotOf(layout_, at), n_.hash, (*object)->ptr());
    co_return Written(at.object);
  }

  // Hopscotch: finds an empty slot in the next kProbeLimit buckets that can be moved
  // back, one pair at a time within its neighbourhood, to the home's next bucket (the
  // nearest such slot). Nothing moves unless the whole way is clear.
  Task<absl::StatusOr<std::optional<SlotAt>>> Displace() {
    const Shard& shard = map_.shards()[n_.home.shard];
    const uint32_t home = n_.home.bucket;
    const uint32_t last = std::min(home + kProbeLimit, shard.buckets - 1);
    for (uint32_t j = home + 2; j <= last; ++j) {
      absl::StatusOr<ObjBuf*> b = co_await TxRead(tx_, map_.Bucket(n_.home.shard, j));
      if (!b.ok()) co_return b.status();
      n_.buckets.push_back(BucketCopy{j, *b});
      std::optional<SlotAt> empty = EmptySlot(*b, true);
      if (!empty) continue;
      std::optional<std::vector<uint32_t>> way = PlanWay(shard);
      if (!way) continue;
      absl::StatusOr<SlotAt> hole = Move(*empty, *way);
      if (!hole.ok()) co_return hole.status();
      co_return std::optional<SlotAt>(*hole);
    }
    co_return std::nullopt;
  }

  // For the empty slot in the last bucket read (n_.buckets[k] is bucket home + k): for
  // each bucket from it down to home + 2, the slot of a pair in the bucket before whose
  // home is that bucket before (so it may live one further on). nullopt: no way.
  std::optional<std::vector<uint32_t>> PlanWay(const Shard& shard) const {
    const size_t e = n_.buckets.size() - 1;
    std::vector<uint32_t> from(e + 1);
    for (size_t k = e; k >= 2; --k) {
      ObjBuf* prev = n_.buckets[k - 1].object;
      std::optional<uint32_t> movable;
      for (uint32_t i = 0; i < layout_.slots_per_bucket() && !movable; ++i) {
        std::span<const char> slot = BucketSlot(prev->data(), layout_, i);
        if (KindOf(slot) == SlotKind::kEmpty) continue;
        if (map_.BucketOf(SlotHash(slot), shard) == n_.home.bucket + k - 1) movable = i;
      }
      if (!movable) return std::nullopt;
      from[k - 1] = *movable;
    }
    return from;
  }

  // Moves the pairs of `way` forward; the hole ends in the home's next bucket.
  absl::StatusOr<SlotAt> Move(SlotAt hole, const std::vector<uint32_t>& way) {
    for (size_t k = n_.buckets.size() - 1; k >= 2; --k) {
      const SlotAt src{n_.buckets[k - 1].object, true, way[k - 1]};
      std::span<char> to = SlotOf(layout_, hole);
      std::span<const char> pair = SlotOf(layout_, src);
      std::copy(pair.begin(), pair.end(), to.begin());
      ClearSlot(SlotOf(layout_, src));
      if (absl::Status s = Written(hole.object); !s.ok()) return s;
      if (absl::Status s = Written(src.object); !s.ok()) return s;
      hole = src;
    }
    return hole;
  }

  // Into the chain's last block, or a new block at its end.
  Task<absl::Status> Append(absl::string_view key, absl::string_view value) {
    if (!n_.chain.empty()) {
      if (std::optional<SlotAt> free = EmptySlot(n_.chain.back(), false)) {
        co_return co_await WritePair(*free, key, value);
      }
    }
    ObjBuf* bucket = n_.buckets[0].object;
    absl::StatusOr<ObjBuf*> block = co_await TxAlloc(tx_, layout_.block_bytes(), bucket->ptr().addr);
    if (!block.ok()) co_return block.status();
    if (absl::Status s = co_await WritePair(SlotAt{*block, false, 0}, key, value); !s.ok()) co_return s;
    if (n_.chain.empty()) {
      SetOverflow(bucket->data(), (*block)->ptr());
      co_return Written(bucket);
    }
    SetNext(n_.chain.back()->data(), (*block)->ptr());
    co_return Written(n_.chain.back());
  }

  Tx& tx_;
  const ShardMap& map_;
  const TableLayout& layout_;
  BucketWrites& writes_;
  Neighbourhood& n_;
};

}  // namespace

void BucketWrites::Add(uint32_t shard, uint32_t bucket, ObjBuf* object) {
  for (const Written& w : written_) {
    if (w.object == object) return;
  }
  written_.push_back(Written{shard, bucket, object});
}

void BucketWrites::Seal() {
  std::sort(written_.begin(), written_.end(), [](const Written& a, const Written& b) {
    return std::tie(a.shard, a.bucket) < std::tie(b.shard, b.bucket);
  });
  for (size_t i = 0; i + 1 < written_.size(); ++i) {
    const Written& a = written_[i];
    const Written& b = written_[i + 1];
    if (a.shard != b.shard || a.bucket + 1 != b.bucket) continue;
    const uint16_t joint = static_cast<uint16_t>(FrontVersion(a.object->data()) + 1);
    SetFrontVersion(a.object->data(), joint);
    SetBackVersion(b.object->data(), joint);
  }
  written_.clear();
}

Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ShardMap& map,
                                                          BucketWrites& writes, std::string key,
                                                          std::vector<KeyOp> ops) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  Neighbourhood n;
  if (absl::Status s = co_await Find(tx, map, key, n); !s.ok()) co_return s;
  std::optional<std::string> value = n.value;
  std::vector<KeyOpResult> results;
  const bool changed = ApplyOpsToValue(value, ops, results);
  if (!changed || (!value && !n.at)) co_return results;
  Writer writer(tx, map, writes, n);
  if (value) {
    if (absl::Status s = co_await writer.Store(key, *value); !s.ok()) co_return s;
  } else if (absl::Status s = writer.Erase(); !s.ok()) {
    co_return s;
  }
  co_return results;
}

Task<absl::StatusOr<size_t>> HopscotchApplier::Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                                     uint64_t max_write_bytes) const {
  BucketWrites writes;
  const ShardMap& map = *map_;
  absl::StatusOr<size_t> applied =
      co_await ApplyKeysInOrder(tx, keys, max_write_bytes, [&tx, &map, &writes](std::string key, std::vector<KeyOp> ops) {
        return ApplyToKey(tx, map, writes, std::move(key), std::move(ops));
      });
  if (applied.ok()) writes.Seal();
  co_return applied;
}

Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ShardMap& map, std::string key) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  Neighbourhood n;
  if (absl::Status s = co_await Find(tx, map, key, n); !s.ok()) co_return s;
  co_return std::move(n.value);
}

}  // namespace farm::kv
