// CuckooOps' WRITE side: PUT, INCR and DELETE (cuckoo_ops.h invariants 1-3, 6, 7), and the
// DTE steps they share with MIGRATE: a fresh invalid DTE, its validation, recycling.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/api/log.h"
#include "farm/api/wire.h"
#include "kv/cuckoo/cuckoo_ops.h"
#include "kv/layout.h"

namespace farm::kv::cuckoo {

Task<absl::StatusOr<bool>> CuckooOps::CasIte(uint64_t slot, uint64_t expected, uint64_t desired) {
  const RawLocation at = map_.IndexWord(slot);
  absl::StatusOr<uint64_t> old = co_await RawCas64(ctx_, at.object, at.offset, expected, desired);
  if (!old.ok()) co_return old.status();
  co_return *old == expected;
}

Task<absl::StatusOr<EntryRef>> CuckooOps::WriteEntry(absl::string_view key,
                                                     absl::string_view value) {
  const std::optional<uint32_t> size_class = ClassFor(key.size(), value.size());
  if (!size_class) {
    co_return absl::InvalidArgumentError(absl::StrCat(
        "cuckoo: a pair of ", key.size() + value.size(), " bytes is over the largest data entry"));
  }
  std::optional<EntryRef> ref = pool_.Take(*size_class);
  if (!ref) {
    ++updates_.reclaims;
    absl::StatusOr<uint32_t> freed = co_await pool_.Reclaim(ctx_, *size_class);
    if (!freed.ok()) co_return freed.status();
    ref = pool_.Take(*size_class);
  }
  if (!ref) {
    ++updates_.full;
    co_return absl::ResourceExhaustedError(
        absl::StrCat("cuckoo: worker thread ", ctx_.thread_index(), " of node ", ctx_.self(),
                     " has no free data entry of ", kClassBytes[*size_class],
                     " bytes (its slice of the data table is full; on a compute-only member, "
                     "every guest slice it may claim may be taken)"));
  }
  scratch_.resize(kEntryHeaderBytes + key.size() + value.size());
  EncodeEntry(ref->version, key, value, std::span<char>(scratch_.data(), scratch_.size()));
  const RawLocation at = map_.Entry(*ref);
  // RawWrite copies the bytes before it suspends: scratch_ is free again after.
  absl::Status written =
      co_await RawWrite(ctx_, at.object, at.offset, std::span<const char>(scratch_));
  if (!written.ok()) {
    pool_.Return(*ref);
    co_return written;
  }
  co_return *ref;
}

Task<absl::Status> CuckooOps::Validate(const EntryRef& ref) {
  const RawLocation at = map_.Entry(ref);
  // Fails harmlessly when the entry was recycled meanwhile (entry_format.h invariant 3).
  absl::StatusOr<uint64_t> old = co_await RawCas64(
      ctx_, at.object, at.offset, StateWord(ref.version, 0), StateWord(ref.version, kValid));
  co_return old.status();
}

Task<absl::Status> CuckooOps::Recycle(uint64_t ite) {
  const EntryRef ref = DecodeIte(ite);
  const RawLocation at = map_.Entry(ref);
  const uint64_t recycled = StateWord(ref.version, kRecycled);
  absl::StatusOr<uint64_t> old =
      co_await RawCas64(ctx_, at.object, at.offset, StateWord(ref.version, kValid), recycled);
  if (old.ok() && *old == StateWord(ref.version, 0)) {
    old = co_await RawCas64(ctx_, at.object, at.offset, StateWord(ref.version, 0), recycled);
  }
  if (!old.ok()) co_return old.status();
  if (StateVersion(*old) != ref.version) {
    FARM_LOG(kError, "cuckoo: recycling entry %u v%u found version %u", ref.entry, ref.version,
             StateVersion(*old));
  }
  pool_.Free(ref);  // only if this thread owns it; else its owner's Reclaim finds the mark
  co_return absl::OkStatus();
}

Task<absl::StatusOr<KeyOpResult>> CuckooOps::Update(OpKind kind, std::string key, std::string value,
                                                    int64_t delta) {
  const uint64_t hash = HashKey(key);
  const uint8_t filter = KeyFilter(hash);
  const std::array<uint64_t, kMaxWays> slots = map_.Candidates(hash);
  const int ways = static_cast<int>(map_.ways());
  ++updates_.updates;
  for (uint32_t attempt = 0; attempt < limits_.max_attempts; ++attempt) {
    if (attempt > 0) {
      ++updates_.retries;
      co_await Backoff(attempt);
    }
    // Forward pass: the key's slot (a valid DTE of the key) and the first empty slot.
    std::array<uint64_t, kMaxWays> ites{};
    int match = -1, empty = -1;
    bool again = false;
    EntryRead matched;
    for (int i = 0; i < ways && !again; ++i) {
      absl::StatusOr<uint64_t> ite = co_await ReadIte(slots[i], ReadFor::kUpdate);
      if (!ite.ok()) co_return ite.status();
      ites[i] = *ite;
      if (*ite == 0) {
        if (empty < 0) empty = i;
        continue;
      }
      if (IteFilter(*ite) != filter) continue;
      absl::StatusOr<EntryRead> entry = co_await ReadEntry(*ite, ReadFor::kUpdate);
      if (!entry.ok()) co_return entry.status();
      if (entry->found == Found::kChanged) {
        again = true;
      } else if (entry->key() == key) {
        // Invalid: another operation on the key is in flight (invariant 2). Two valid
        // entries never coexist (invariant 1); a second is a conflict all the same.
        again = entry->found == Found::kInvalid || match >= 0;
        match = i;
        matched = std::move(*entry);
      }
    }
    if (again) continue;

    std::optional<std::string> current;
    if (match >= 0) current = std::string(matched.value());
    std::vector<KeyOp> ops;
    ops.push_back(KeyOp{kind, value, delta});
    std::vector<KeyOpResult> results;
    const bool changed = ApplyOpsToValue(current, ops, results);
    if (!changed) {
      // Nothing to write (a remove of an absent key, a failed increment): linearized at
      // the valid DTE's ITE READ, or, for an absent key, by the reverse pass.
      if (match >= 0) co_return results[0];
      absl::StatusOr<bool> unchanged = co_await Unchanged(slots, ites, -1, ReadFor::kUpdate);
      if (!unchanged.ok()) co_return unchanged.status();
      if (*unchanged) co_return results[0];
      continue;
    }
    if (!current.has_value()) {
      // DELETE of a present key: one CAS (invariant 6).
      absl::StatusOr<bool> cleared = co_await CasIte(slots[match], ites[match], 0);
      if (!cleared.ok()) co_return cleared.status();
      if (!*cleared) continue;
      if (absl::Status s = co_await Recycle(ites[match]); !s.ok()) co_return s;
      co_return results[0];
    }
    const int target = match >= 0 ? match : empty;
    if (target < 0) {
      // Every candidate holds another key: MIGRATE one away, then start again.
      Moved moved = Moved::kFull;
      for (int i = 0; i < ways && moved == Moved::kFull; ++i) {
        absl::StatusOr<Moved> m = co_await FreeSlot(slots[i], ites[i], 0);
        if (!m.ok()) co_return m.status();
        moved = *m;
      }
      if (moved == Moved::kFull) {
        ++updates_.full;
        co_return absl::ResourceExhaustedError(absl::StrCat(
            "cuckoo: no free index slot for the key within ", limits_.max_displacement,
            " displacements (", ways, "-way index of ", map_.index_slots(), " slots is too full)"));
      }
      if (moved == Moved::kDone) --attempt;  // a displacement is progress, not a conflict
      continue;
    }
    absl::StatusOr<EntryRef> fresh = co_await WriteEntry(key, *current);
    if (!fresh.ok()) co_return fresh.status();
    const uint64_t fresh_ite = EncodeIte(*fresh, filter);
    absl::StatusOr<bool> installed = co_await CasIte(slots[target], ites[target], fresh_ite);
    if (!installed.ok()) co_return installed.status();
    if (!*installed) {
      pool_.Return(*fresh);
      continue;
    }
    // Reverse pass (invariant 3): no other candidate changed while the DTE went in.
    absl::StatusOr<bool> unchanged = co_await Unchanged(slots, ites, target, ReadFor::kUpdate);
    if (!unchanged.ok()) co_return unchanged.status();
    if (!*unchanged) {
      ++updates_.rollbacks;
      absl::StatusOr<bool> undone = co_await CasIte(slots[target], fresh_ite, ites[target]);
      if (!undone.ok()) co_return undone.status();
      if (*undone) {
        pool_.Return(*fresh);
      } else {
        FARM_LOG(kError, "cuckoo: a rollback of slot %llu found it changed (invariant 2 broken)",
                 static_cast<unsigned long long>(slots[target]));
      }
      continue;
    }
    if (absl::Status s = co_await Validate(*fresh); !s.ok()) co_return s;
    if (match >= 0) {
      if (absl::Status s = co_await Recycle(ites[match]); !s.ok()) co_return s;
    }
    co_return results[0];
  }
  co_return absl::AbortedError(absl::StrCat("cuckoo: an update met concurrent operations ",
                                            limits_.max_attempts, " times in a row"));
}

}  // namespace farm::kv::cuckoo
