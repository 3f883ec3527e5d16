// CuckooOps' READ side: ITE and DTE reads, the reverse pass, GET (cuckoo_ops.h
// invariant 4) and backoff.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"
#include "kv/cuckoo/cuckoo_ops.h"
#include "kv/layout.h"

namespace farm::kv::cuckoo {
namespace {

bool Addressable(const CuckooMap& map, const EntryRef& ref) {
  if (ref.table >= map.nodes().size()) return false;
  const ClassTable& c = map.nodes()[ref.table].data[ref.size_class];
  return ref.entry < uint64_t{c.objects.size()} * c.entries_per_object && ref.version != 0;
}

}  // namespace

void CuckooOps::CountRead(ReadFor read_for, uint64_t bytes) {
  if (read_for == ReadFor::kLookup) {
    ++lookups_.reads;
    lookups_.bytes_read += bytes;
  } else {
    ++updates_.reads;
    updates_.bytes_read += bytes;
  }
}

Task<absl::StatusOr<uint64_t>> CuckooOps::ReadIte(uint64_t slot, ReadFor read_for) {
  const RawLocation at = map_.IndexWord(slot);
  absl::StatusOr<RawCopy> copy =
      co_await RawRead(ctx_, at.object, at.offset, 8);  // one word: atomic
  CountRead(read_for, 8);
  if (!copy.ok()) co_return copy.status();
  co_return LoadLe<uint64_t>(copy->data.data());
}

Task<absl::StatusOr<CuckooOps::EntryRead>> CuckooOps::ReadEntry(uint64_t ite, ReadFor read_for) {
  const EntryRef ref = DecodeIte(ite);
  if (!Addressable(map_, ref)) {
    co_return absl::DataLossError(
        absl::StrCat("cuckoo: an index entry naming no data entry: ", ite));
  }
  const RawLocation at = map_.Entry(ref);
  const uint32_t class_bytes = kClassBytes[ref.size_class];
  const uint32_t first = std::min(class_bytes, kFirstReadBytes);
  absl::StatusOr<RawCopy> copy = co_await RawRead(ctx_, at.object, at.offset, first);
  CountRead(read_for, first);
  if (!copy.ok()) co_return copy.status();
  EntryRead r;
  r.bytes = std::move(copy->data);
  bool torn = copy->torn;
  EntryView view;
  if (absl::Status s = ParseEntry(r.bytes, class_bytes, view); !s.ok()) co_return s;
  if (StateVersion(view.state) != ref.version || StateFlags(view.state) == kRecycled || torn)
    co_return r;
  const uint64_t need = uint64_t{kEntryHeaderBytes} + view.key_bytes + view.value_bytes;
  if (need > class_bytes) co_return r;  // lengths of a torn copy
  if (need > first) {
    // The rest of the pair; the checksum (over the version too) ties both READs to one
    // incarnation.
    absl::StatusOr<RawCopy> rest =
        co_await RawRead(ctx_, at.object, at.offset + first, static_cast<uint32_t>(need - first));
    CountRead(read_for, need - first);
    if (!rest.ok()) co_return rest.status();
    r.bytes.append(rest->data);
    torn = torn || rest->torn;
    if (absl::Status s = ParseEntry(r.bytes, class_bytes, view); !s.ok()) co_return s;
  }
  if (torn || !ChecksumMatches(r.bytes, view)) co_return r;
  r.found = (StateFlags(view.state) & kValid) ? Found::kEntry : Found::kInvalid;
  r.key_bytes = view.key_bytes;
  r.value_bytes = view.value_bytes;
  co_return r;
}

Task<absl::StatusOr<bool>> CuckooOps::Unchanged(const std::array<uint64_t, kMaxWays>& slots,
                                                const std::array<uint64_t, kMaxWays>& ites,
                                                int skip, ReadFor read_for) {
  for (int i = static_cast<int>(map_.ways()) - 1; i >= 0; --i) {
    if (i == skip) continue;
    absl::StatusOr<uint64_t> now = co_await ReadIte(slots[i], read_for);
    if (!now.ok()) co_return now.status();
    if (*now != ites[i]) co_return false;
  }
  co_return true;
}

Task<void> CuckooOps::Backoff(uint32_t attempt) {
  jitter_ ^= jitter_ << 13;
  jitter_ ^= jitter_ >> 7;
  jitter_ ^= jitter_ << 17;
  const int64_t ceiling_us = int64_t{1} << std::min<uint32_t>(attempt, 10);  // up to ~1 ms
  co_await SleepFor(
      ctx_,
      absl::Microseconds(1 + static_cast<int64_t>(jitter_ % static_cast<uint64_t>(ceiling_us))));
}

Task<absl::StatusOr<std::optional<std::string>>> CuckooOps::Get(std::string key) {
  const uint64_t hash = HashKey(key);
  const uint8_t filter = KeyFilter(hash);
  const std::array<uint64_t, kMaxWays> slots = map_.Candidates(hash);
  ++lookups_.lookups;
  for (uint32_t attempt = 0; attempt < limits_.max_attempts; ++attempt) {
    if (attempt > 0) {
      ++lookups_.restarts;
      co_await Backoff(attempt);
    }
    std::array<uint64_t, kMaxWays> ites{};
    bool again = false;
    for (uint32_t i = 0; i < map_.ways(); ++i) {
      absl::StatusOr<uint64_t> ite = co_await ReadIte(slots[i], ReadFor::kLookup);
      if (!ite.ok()) co_return ite.status();
      ites[i] = *ite;
      if (*ite == 0 || IteFilter(*ite) != filter) continue;
      absl::StatusOr<EntryRead> entry = co_await ReadEntry(*ite, ReadFor::kLookup);
      if (!entry.ok()) co_return entry.status();
      if (entry->found == Found::kChanged) {
        again = true;  // the ITE moved on since it was read
      } else if (entry->key() == key) {
        // A valid entry of the key is its value (at most one exists, invariant 1). An
        // invalid one is a PUT or a MIGRATE copy in flight: a MIGRATE's source may still
        // hold the valid entry further on, so look on; without one, back off.
        if (entry->found == Found::kEntry)
          co_return std::optional<std::string>(std::string(entry->value()));
        again = true;
      }
    }
    if (again) continue;
    absl::StatusOr<bool> unchanged = co_await Unchanged(slots, ites, -1, ReadFor::kLookup);
    if (!unchanged.ok()) co_return unchanged.status();
    if (*unchanged) co_return std::optional<std::string>();
  }
  co_return absl::AbortedError(absl::StrCat("cuckoo: a lookup met concurrent updates ",
                                            limits_.max_attempts, " times in a row"));
}

}  // namespace farm::kv::cuckoo
