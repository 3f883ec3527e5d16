// CuckooOps' MIGRATE (cuckoo_ops.h invariant 5): frees an index slot by moving its pair to
// an empty alternative slot of that pair's key, recursively up to max_displacement
// levels, with the test seam's pauses between the steps.
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kv/cuckoo/cuckoo_ops.h"
#include "kv/layout.h"

namespace farm::kv::cuckoo {
namespace {

// Suspends until the hook calls resume.
class HookPause {
 public:
  HookPause(MigrationHook& hook, MigrationStep step, absl::string_view key)
      : hook_(hook), step_(step), key_(key) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    hook_(step_, key_, [h] { h.resume(); });
  }
  void await_resume() const noexcept {}

 private:
  MigrationHook& hook_;
  MigrationStep step_;
  absl::string_view key_;
};

}  // namespace

Task<void> CuckooOps::Pause(MigrationStep step, absl::string_view key) {
  if (!hook_) co_return;
  co_await HookPause(hook_, step, key);
}

Task<absl::StatusOr<CuckooOps::Moved>> CuckooOps::FreeSlot(uint64_t slot, uint64_t ite,
                                                           uint32_t depth) {
  if (ite == 0) co_return Moved::kDone;  // emptied meanwhile
  absl::StatusOr<EntryRead> entry = co_await ReadEntry(ite, ReadFor::kUpdate);
  if (!entry.ok()) co_return entry.status();
  // Changed, or an operation on that key in flight (invariant 2): leave it alone.
  if (entry->found != Found::kEntry) {
    ++updates_.migration_aborts;
    co_return Moved::kRetry;
  }
  const std::string key(entry->key());
  const uint64_t hash = HashKey(key);
  const std::array<uint64_t, kMaxWays> alternatives = map_.Candidates(hash);
  // The first empty alternative; else the occupied ones, to displace in turn.
  std::optional<uint64_t> destination;
  std::array<std::pair<uint64_t, uint64_t>, kMaxWays> occupied{};
  uint32_t occupied_count = 0;
  for (uint32_t j = 0; j < map_.ways() && !destination; ++j) {
    if (alternatives[j] == slot) continue;
    absl::StatusOr<uint64_t> alt = co_await ReadIte(alternatives[j], ReadFor::kUpdate);
    if (!alt.ok()) co_return alt.status();
    if (*alt == 0) {
      destination = alternatives[j];
    } else {
      occupied[occupied_count++] = {alternatives[j], *alt};
    }
  }
  for (uint32_t j = 0; j < occupied_count && !destination; ++j) {
    if (depth + 1 >= limits_.max_displacement) co_return Moved::kFull;
    absl::StatusOr<Moved> deeper =
        co_await FreeSlot(occupied[j].first, occupied[j].second, depth + 1);
    if (!deeper.ok()) co_return deeper.status();
    if (*deeper == Moved::kRetry) co_return Moved::kRetry;
    if (*deeper == Moved::kDone) {
      absl::StatusOr<uint64_t> now = co_await ReadIte(occupied[j].first, ReadFor::kUpdate);
      if (!now.ok()) co_return now.status();
      if (*now != 0) co_return Moved::kRetry;
      destination = occupied[j].first;
    }
  }
  if (!destination) co_return Moved::kFull;

  // Copy (invalid), install in the destination, clear the source, validate, recycle.
  absl::StatusOr<EntryRef> copy = co_await WriteEntry(key, entry->value());
  if (!copy.ok()) co_return copy.status();
  const uint64_t copy_ite = EncodeIte(*copy, KeyFilter(hash));
  absl::StatusOr<bool> installed = co_await CasIte(*destination, 0, copy_ite);
  if (!installed.ok()) co_return installed.status();
  if (!*installed) {
    pool_.Return(*copy);
    ++updates_.migration_aborts;
    co_return Moved::kRetry;
  }
  co_await Pause(MigrationStep::kDestinationInstalled, key);
  absl::StatusOr<bool> cleared = co_await CasIte(slot, ite, 0);
  if (!cleared.ok()) co_return cleared.status();
  if (!*cleared) {
    // The source changed (its key was updated or deleted): undo the copy. Nobody else
    // changes an ITE naming an invalid DTE (invariant 2), so this CAS succeeds.
    absl::StatusOr<bool> undone = co_await CasIte(*destination, copy_ite, 0);
    if (!undone.ok()) co_return undone.status();
    if (*undone) pool_.Return(*copy);
    ++updates_.migration_aborts;
    co_return Moved::kRetry;
  }
  co_await Pause(MigrationStep::kSourceCleared, key);
  if (absl::Status s = co_await Validate(*copy); !s.ok()) co_return s;
  if (absl::Status s = co_await Recycle(ite); !s.ok()) co_return s;
  ++updates_.migrations;
  co_return Moved::kDone;
}

}  // namespace farm::kv::cuckoo
