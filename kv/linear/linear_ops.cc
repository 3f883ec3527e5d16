#include "kv/linear/linear_ops.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kv/layout.h"
#include "kv/linear/slot_format.h"
#include "kv/tx_operation.h"

namespace farm::kv::linear {
namespace {

// A slot the transaction read: its group (an index into Probe::groups) and place.
struct SlotAt {
  size_t group = 0;
  uint32_t index = 0;
};

// What a transaction has read of one key's probe sequence, from its home on.
struct Probe {
  uint64_t hash = 0;
  uint64_t home = 0;
  uint64_t next = 0;            // the table index of the next slot to examine
  std::vector<ObjBuf*> groups;  // in probe order (a group read twice is one copy)
  std::vector<SlotAt> seen;     // the slots examined, in probe order
  std::optional<size_t> at;     // where the key is (an index into seen)
  std::optional<size_t> free;   // the first tombstone or empty slot
  std::optional<size_t> empty;  // the empty slot the probe stopped at, if it did
  std::optional<std::string> value;
  FatPtr value_object;          // when the pair is out of line
};

std::span<char> SlotOf(const Probe& p, const SlotLayout& layout, size_t seen) {
  const SlotAt& at = p.seen[seen];
  return GroupSlot(p.groups[at.group]->data(), layout, at.index);
}

Kind KindAt(const Probe& p, const SlotLayout& layout, size_t seen) { return KindOfSlot(SlotOf(p, layout, seen)); }

// Reads the probe's next slot (its group, when it starts one) into `seen`.
Task<absl::StatusOr<Kind>> Examine(Tx& tx, const ProbeMap& map, Probe& p) {
  const uint64_t index = p.next;
  if (p.groups.empty() || map.SlotInGroup(index) == 0) {
    absl::StatusOr<ObjBuf*> group = co_await TxRead(tx, map.Group(map.GroupOf(index)));
    if (!group.ok()) co_return group.status();
    if (absl::Status s = CheckGroup((*group)->data(), map.layout()); !s.ok()) co_return s;
    p.groups.push_back(*group);
  }
  p.seen.push_back(SlotAt{p.groups.size() - 1, map.SlotInGroup(index)});
  p.next = map.Advance(index, 1);
  std::span<const char> slot = SlotOf(p, map.layout(), p.seen.size() - 1);
  if (absl::Status s = CheckLinearSlot(slot, map.layout()); !s.ok()) co_return s;
  co_return KindOfSlot(slot);
}

// Is the pair in this (inline or out-of-line) slot the key? Reads an out-of-line value
// whose hash matches.
Task<absl::StatusOr<bool>> Match(Tx& tx, std::span<const char> slot, absl::string_view key, Probe& p) {
  if (KindOfSlot(slot) == Kind::kInline) {
    if (InlineKey(slot) != key) co_return false;
    p.value = std::string(InlineValue(slot));
    co_return true;
  }
  if (OutOfLineHash(slot) != p.hash) co_return false;
  const FatPtr value = OutOfLineValue(slot);
  absl::StatusOr<ObjBuf*> object = co_await TxRead(tx, value);
  if (!object.ok()) co_return Retryable(object.status());
  absl::StatusOr<std::pair<absl::string_view, absl::string_view>> kv = ParseValueObject((*object)->data());
  if (!kv.ok()) co_return kv.status();
  if (kv->first != key) co_return false;
  p.value = std::string(kv->second);
  p.value_object = value;
  co_return true;
}

// Reads the key's probe sequence from its home to the key and the slot after it (which
// decides whether a remove may clear the key's slot, invariant 3), or to the first
// empty slot, at most max_probe slots; notes the first free slot.
Task<absl::Status> Find(Tx& tx, const ProbeMap& map, absl::string_view key, Probe& p) {
  p.hash = HashKey(key);
  p.home = map.HomeOf(p.hash);
  p.next = p.home;
  while (p.seen.size() < map.max_probe()) {
    absl::StatusOr<Kind> kind = co_await Examine(tx, map, p);
    if (!kind.ok()) co_return kind.status();
    const size_t here = p.seen.size() - 1;
    if (*kind == Kind::kEmpty || *kind == Kind::kTombstone) {
      if (!p.free) p.free = here;
      if (*kind == Kind::kEmpty) {
        p.empty = here;
        co_return absl::OkStatus();
      }
      continue;
    }
    absl::StatusOr<bool> match = co_await Match(tx, SlotOf(p, map.layout(), here), key, p);
    if (!match.ok()) co_return match.status();
    if (!*match) continue;
    p.at = here;
    absl::StatusOr<Kind> after = co_await Examine(tx, map, p);
    if (!after.ok()) co_return after.status();
    if (*after == Kind::kEmpty) p.empty = p.seen.size() - 1;
    co_return absl::OkStatus();
  }
  co_return absl::OkStatus();  // the probe bound: the key is not in the table (invariant 4)
}

class Writer {
 public:
  Writer(Tx& tx, const ProbeMap& map, Probe& p) : tx_(tx), map_(map), layout_(map.layout()), p_(p) {}

  // key = value in the key's slot, or in the first free one (invariants 1, 2 and 4). An
  // insert also clears the tombstones right before the empty slot its probe stopped at
  // (invariant 3: each one's next slot is then empty).
  Task<absl::Status> Store(absl::string_view key, absl::string_view value) {
    if (p_.at) {
      if (!p_.value_object.is_null()) {
        if (absl::Status s = txFree(tx_, p_.value_object); !s.ok()) co_return s;
      }
      co_return co_await WritePair(*p_.at, key, value);
    }
    if (!p_.free) {
      co_return absl::ResourceExhaustedError(absl::StrFormat(
          "the linear-probing table has no free slot within %d slots of the key's home", map_.max_probe()));
    }
    if (absl::Status s = co_await WritePair(*p_.free, key, value); !s.ok()) co_return s;
    if (p_.empty && *p_.empty > *p_.free) co_return ClearBackFrom(*p_.empty - 1, *p_.free + 1);
    co_return absl::OkStatus();
  }

  // Removes the key (present): its slot becomes empty if the run ends right after it,
  // past tombstones only, and then those tombstones and the ones right before it are
  // cleared too (invariant 3); else it becomes a tombstone.
  Task<absl::Status> Erase() {
    if (!p_.value_object.is_null()) {
      if (absl::Status s = txFree(tx_, p_.value_object); !s.ok()) co_return s;
    }
    const size_t at = *p_.at;
    // Find read the slot after the key; follow tombstones from there to see whether an
    // empty slot ends the run (never examining a slot twice: at most the whole table).
    while (!p_.empty && KindAt(p_, layout_, p_.seen.size() - 1) == Kind::kTombstone &&
           p_.seen.size() < map_.slots()) {
      absl::StatusOr<Kind> kind = co_await Examine(tx_, map_, p_);
      if (!kind.ok()) co_return kind.status();
      if (*kind == Kind::kEmpty) p_.empty = p_.seen.size() - 1;
    }
    if (!p_.empty) {
      WriteTombstone(SlotOf(p_, layout_, at));
      co_return Written(at);
    }
    WriteEmpty(SlotOf(p_, layout_, at));
    if (absl::Status s = Written(at); !s.ok()) co_return s;
    if (*p_.empty > at + 1) {
      if (absl::Status s = ClearBackFrom(*p_.empty - 1, at + 1); !s.ok()) co_return s;
    }
    if (at > 0) co_return ClearBackFrom(at - 1, 0);
    co_return absl::OkStatus();
  }

 private:
  // Clears the tombstones of seen[last], seen[last - 1], ... down to seen[first], and
  // stops at the first slot that is not one. The caller has made seen[last + 1] empty.
  absl::Status ClearBackFrom(size_t last, size_t first) {
    for (size_t i = last + 1; i-- > first;) {
      if (KindAt(p_, layout_, i) != Kind::kTombstone) break;
      WriteEmpty(SlotOf(p_, layout_, i));
      if (absl::Status s = Written(i); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::Status Written(size_t seen) {
    ObjBuf* group = p_.groups[p_.seen[seen].group];
    StampGroup(group->data(), layout_);
    return txWrite(tx_, group);
  }

  Task<absl::Status> WritePair(size_t seen, absl::string_view key, absl::string_view value) {
    std::span<char> slot = SlotOf(p_, layout_, seen);
    if (layout_.FitsInline(key.size(), value.size())) {
      WriteInline(slot, key, value);
      co_return Written(seen);
    }
    // Out of line, next to the key's home group (collocated with its shard).
    absl::StatusOr<ObjBuf*> object =
        co_await TxAlloc(tx_, ValueObjectBytes(key, value), p_.groups[0]->ptr().addr);
    if (!object.ok()) co_return object.status();
    WriteValueObject((*object)->data(), key, value);
    if (absl::Status s = txWrite(tx_, *object); !s.ok()) co_return s;
    WriteOutOfLine(SlotOf(p_, layout_, seen), p_.hash, (*object)->ptr());
    co_return Written(seen);
  }

  Tx& tx_;
  const ProbeMap& map_;
  const SlotLayout& layout_;
  Probe& p_;
};

}  // namespace

Task<absl::StatusOr<std::vector<KeyOpResult>>> ApplyToKey(Tx& tx, const ProbeMap& map, std::string key,
                                                          std::vector<KeyOp> ops) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  Probe p;
  if (absl::Status s = co_await Find(tx, map, key, p); !s.ok()) co_return s;
  std::optional<std::string> value = p.value;
  std::vector<KeyOpResult> results;
  const bool changed = ApplyOpsToValue(value, ops, results);
  if (!changed || (!value && !p.at)) co_return results;
  Writer writer(tx, map, p);
  if (value) {
    if (absl::Status s = co_await writer.Store(key, *value); !s.ok()) co_return s;
  } else if (absl::Status s = co_await writer.Erase(); !s.ok()) {
    co_return s;
  }
  co_return results;
}

Task<absl::StatusOr<std::optional<std::string>>> LookupInTx(Tx& tx, const ProbeMap& map, std::string key) {
  if (absl::Status s = CheckKeyLimit(key); !s.ok()) co_return s;
  Probe p;
  if (absl::Status s = co_await Find(tx, map, key, p); !s.ok()) co_return s;
  co_return std::move(p.value);
}

Task<absl::StatusOr<size_t>> LinearApplier::Apply(Tx& tx, absl::Span<KeyUpdates> keys,
                                                  uint64_t max_write_bytes) const {
  const ProbeMap& map = *map_;
  co_return co_await ApplyKeysInOrder(tx, keys, max_write_bytes, [&tx, &map](std::string key, std::vector<KeyOp> ops) {
    return ApplyToKey(tx, map, std::move(key), std::move(ops));
  });
}

}  // namespace farm::kv::linear
