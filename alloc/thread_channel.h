// ThreadChannel: what one thread's allocator asks of the machines around it — the
// messages of the allocation protocol, seen from the sending side. The node implements
// it over the thread's MsgThread (alloc_service.h); LocalChannel serves a single
// machine (no backups, no peers) for tests, tools and r = 1 clusters of one.
//
// Contract for every method: `done` runs exactly once, on the calling thread, possibly
// before the method returns (callers must not rely on either).
#ifndef FARM_ALLOC_THREAD_CHANNEL_H_
#define FARM_ALLOC_THREAD_CHANNEL_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/base/address.h"

namespace farm {
class EventLoop;
}

namespace farm::alloc {

class EpochManager;

using StatusDone = absl::AnyInvocable<void(const absl::Status&)>;
using PtrDone = absl::AnyInvocable<void(absl::StatusOr<FatPtr>)>;

class ThreadChannel {
 public:
  virtual ~ThreadChannel() = default;

  // Tells `backups` that this node created region `region` of `bytes` bytes (they hold
  // a copy from now on). OK once all have acknowledged.
  virtual void ReplicateRegion(std::span<const NodeId> backups, RegionId region, uint64_t bytes,
                               StatusDone done) = 0;
  // Sends block-table entries [first_unit, first_unit + words.size()) of `region` to
  // `backups`. OK once all have applied them.
  virtual void ReplicateBlockWords(std::span<const NodeId> backups, RegionId region,
                                   uint32_t first_unit, std::span<const uint64_t> words,
                                   StatusDone done) = 0;
  // Allocates `payload` bytes near `hint` on `primary`, the primary of hint's region.
  virtual void AllocateRemote(NodeId primary, uint32_t payload, Addr hint, PtrDone done) = 0;
  // Frees `object` on `primary`, the primary of its region.
  virtual void FreeRemote(NodeId primary, FatPtr object, StatusDone done) = 0;
  // An end-of-epoch round over `members` (this node included): OK once every
  // operation that started on any of them before the round has ended.
  virtual void EndOfEpochRound(std::vector<NodeId> members, StatusDone done) = 0;
};

// A channel for a machine alone: replication to nobody succeeds, remote requests fail
// with Unavailable, and a round waits for this machine's operations only (`loop` is
// where its completion is posted: the calling thread's loop).
class LocalChannel final : public ThreadChannel {
 public:
  LocalChannel(EpochManager* epochs, EventLoop* loop) : epochs_(epochs), loop_(loop) {}

  void ReplicateRegion(std::span<const NodeId> backups, RegionId region, uint64_t bytes,
                       StatusDone done) override;
  void ReplicateBlockWords(std::span<const NodeId> backups, RegionId region, uint32_t first_unit,
                           std::span<const uint64_t> words, StatusDone done) override;
  void AllocateRemote(NodeId primary, uint32_t payload, Addr hint, PtrDone done) override;
  void FreeRemote(NodeId primary, FatPtr object, StatusDone done) override;
  void EndOfEpochRound(std::vector<NodeId> members, StatusDone done) override;

 private:
  EpochManager* const epochs_;
  EventLoop* const loop_;
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_THREAD_CHANNEL_H_
