// PublishedMap<K, V>: a small map read on hot paths without a lock, changed rarely.
//
// Readers see the latest published snapshot, an immutable absl::flat_hash_map, through
// one acquire load: no lock and no read-modify-write, so readers on several threads never
// contend (the registries of regions that every lock-free READ, commit and backup apply
// consults). A change copies the snapshot, edits the copy and publishes it with a release
// store; changes are serialized by a mutex of the map's own.
//
// Invariants:
//  1. A snapshot never changes once published; Find is linearizable with Update (it
//     returns the value in the last snapshot published before its load).
//  2. A replaced snapshot stays allocated until the map is destroyed: a reader may still
//     be looking into it, and nothing here tracks when it stops. So each change costs
//     O(size) time and leaves O(size) memory behind — meant for maps of tens to hundreds
//     of entries changed at human or failover pace (regions created, handed over,
//     dropped), not per operation.
//  3. V is copied out by value (typically a pointer or a small id); what a pointer value
//     points to is the owner's to keep alive, as with any lookup that returns a pointer.
//
// Thread safety: Find, Contains, Size and ForEach on any thread, concurrently with
// Update on any thread.
#ifndef FARM_BASE_PUBLISHED_MAP_H_
#define FARM_BASE_PUBLISHED_MAP_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "farm/base/mutex.h"

namespace farm {

template <typename K, typename V>
class PublishedMap {
  static_assert(std::is_trivially_copyable_v<V>, "values are copied out of a snapshot");

 public:
  using Map = absl::flat_hash_map<K, V>;

  PublishedMap() { Publish(std::make_unique<const Map>()); }
  PublishedMap(const PublishedMap&) = delete;
  PublishedMap& operator=(const PublishedMap&) = delete;

  // The value for `key`, or `absent` when there is none.
  V Find(const K& key, V absent = V{}) const {
    const Map& m = *current_.load(std::memory_order_acquire);
    auto it = m.find(key);
    return it == m.end() ? absent : it->second;
  }
  bool Contains(const K& key) const { return current_.load(std::memory_order_acquire)->contains(key); }
  size_t Size() const { return current_.load(std::memory_order_acquire)->size(); }
  // Calls f(key, value) for each entry of one snapshot.
  template <typename F>
  void ForEach(F&& f) const {
    for (const auto& [k, v] : *current_.load(std::memory_order_acquire)) f(k, v);
  }

  // Publishes change(copy) applied to a copy of the current snapshot; returns what
  // change returns. Runs with the map's writer lock held: change must not call Update.
  template <typename F>
  auto Update(F&& change) {
    MutexLock lock(&writer_);
    auto next = std::make_unique<Map>(*current_.load(std::memory_order_relaxed));
    if constexpr (std::is_void_v<decltype(change(*next))>) {
      change(*next);
      Publish(std::move(next));
    } else {
      auto result = change(*next);
      Publish(std::move(next));
      return result;
    }
  }

 private:
  void Publish(std::unique_ptr<const Map> next) {
    current_.store(next.get(), std::memory_order_release);
    snapshots_.push_back(std::move(next));  // invariant 2: kept until the map goes
  }

  Mutex writer_;
  std::vector<std::unique_ptr<const Map>> snapshots_;  // every one published; the last is current_
  std::atomic<const Map*> current_{nullptr};
};

}  // namespace farm

#endif  // FARM_BASE_PUBLISHED_MAP_H_
