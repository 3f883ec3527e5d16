// AllocService: the allocation protocol over a node's messaging.
//
// Sending side: MsgChannel, a ThreadChannel over one MsgThread — replication of new
// regions and block-table entries to backups (a request to each, OK when all answer),
// allocation near a remote hint and free on the object's primary, end-of-epoch rounds.
// Receiving side: handlers for the same messages, registered on the Messenger before it
// starts:
//   kRemoteAllocMsgId   allocate near a hint in a region this node holds (answer: FatPtr)
//   kRemoteFreeMsgId    free an object of a region this node holds
//   kBackupRegionMsgId  hold a backup copy of a new region (BackupRegions)
//   kBlockStateMsgId    apply block-table entries to a backup copy
//   kRegionCapabilityMsgId  the capability of a region this node holds as primary
//   kEndOfEpochMsgId    end_of_epoch.h
//   kRegionCopy{Begin,Data,End}MsgId  a full copy of a region from its primary
//                       (region_copy.h; RegionCopyReceiver). Refused for a region this
//                       node is the primary of
// Payloads are little-endian, start with the kAllocWireFormat tag, and are checked for
// size before they are read; a malformed request is answered with InvalidArgument.
//
// Durability (with a log): every region copy and block-table change this node holds —
// as primary when it replicates them, as backup when it applies them — is appended to
// the node's log (durable_records.h) and acknowledged only once durable, so a block is
// used only after every copy of its table entry survives a crash. A copy received
// whole is logged too: BEGIN as kRegionReset, each DATA as kRegionImage; BEGIN and END
// are acknowledged once durable — END only once every DATA's record is — while a DATA
// is answered before its record is durable, up to a bound (copy_receiver.h).
//
// Threads: one ThreadAllocator per messenger thread, used on that thread's loop only
// (requests are handled on the thread that receives them). Stop each thread's allocator
// on its loop (StopThread) before the messenger goes; destroy the service after that.
#ifndef FARM_ALLOC_ALLOC_SERVICE_H_
#define FARM_ALLOC_ALLOC_SERVICE_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/allocator.h"
#include "alloc/backup_regions.h"
#include "alloc/copy_receiver.h"
#include "alloc/thread_allocator.h"
#include "alloc/thread_channel.h"
#include "alloc/thread_log.h"
#include "farm/msg/messenger.h"

namespace farm::alloc {

// ThreadChannel over one MsgThread. Every method on that thread.
class MsgChannel final : public ThreadChannel {
 public:
  // `log` (this thread's way to the node's log) must outlive the channel.
  MsgChannel(MsgThread* thread, NodeId self, EpochManager* epochs, ThreadLog* log)
      : thread_(thread), self_(self), epochs_(epochs), log_(log) {}

  void ReplicateRegion(std::span<const NodeId> backups, RegionId region, uint64_t bytes,
                       StatusDone done) override;
  void ReplicateBlockWords(std::span<const NodeId> backups, RegionId region, uint32_t first_unit,
                           std::span<const uint64_t> words, StatusDone done) override;
  void AllocateRemote(NodeId primary, uint32_t payload, Addr hint, PtrDone done) override;
  void FreeRemote(NodeId primary, FatPtr object, StatusDone done) override;
  void EndOfEpochRound(std::vector<NodeId> members, StatusDone done) override;

 private:
  // Sends `payload` as `id` to every node; `done` once all answered (the first error).
  void FanOut(std::span<const NodeId> nodes, MsgId id, std::string payload, StatusDone done);

  MsgThread* const thread_;
  const NodeId self_;
  EpochManager* const epochs_;
  ThreadLog* const log_;
};

// Asks `primary` for the capability of `region` (kRegionCapabilityMsgId), from
// `thread`; `done` on that thread. NotFound when `primary` holds no such region.
void RequestRegionCapability(MsgThread& thread, NodeId primary, RegionId region,
                             absl::AnyInvocable<void(absl::StatusOr<RegionCapability>)> done);

class AllocService {
 public:
  // Registers the handlers (before messenger->Start()) and creates one channel and
  // ThreadAllocator per messenger thread. Everything passed must outlive the service;
  // `log` (null: nothing is logged) must outlive the last completion it runs.
  // `max_unlogged_copy_bytes`: RegionCopyReceiver's bound.
  static absl::StatusOr<std::unique_ptr<AllocService>> Create(
      Messenger* messenger, Allocator* allocator, BackupRegions* backups, storage::RecordLog* log = nullptr,
      uint64_t max_unlogged_copy_bytes = RegionCopyReceiver::kDefaultMaxUnloggedBytes);
  ~AllocService();

  // Thread i's allocator; only on messenger thread i's loop. Null after StopThread(i).
  ThreadAllocator* thread(size_t i) const { return threads_[i].get(); }
  // Destroys thread i's allocator, on thread i's loop while the messenger still works:
  // its waiting requests are answered Cancelled and its blocks go back to the machine.
  // Later log completions of the thread are dropped.
  void StopThread(size_t i) {
    threads_[i].reset();
    logs_[i]->Stop();
  }
  // Thread i's way to the node's log (the transaction layer appends through it too).
  ThreadLog* log(size_t i) const { return logs_[i].get(); }
  size_t thread_count() const { return threads_.size(); }
  BackupRegions& backups() const { return *backups_; }
  // Region copies being received (region_copy.h).
  const RegionCopyReceiver& copies_in_progress() const { return copy_receiver_; }
  // A copy held that the log left partial (the node marks them at start, before the
  // messenger runs): never promoted until a copy of the region succeeds.
  void MarkCopyPartial(RegionId region) { copy_receiver_.MarkPartial(region); }
  // Asked before a copy of `region` from `from` begins (on the receiving messenger thread
  // `thread`; `then` on the same thread, maybe later): OK, or why not yet (the copy is refused with it and
  // the sender sends it again). The node checks that its configuration names `from` as
  // the region's primary and that no transaction record it keeps still touches the
  // region (its decision would land on the copied bytes). Set before the messenger starts.
  using CopyGate = std::function<void(size_t thread, RegionId region, NodeId from,
                                      absl::AnyInvocable<void(absl::Status)> then)>;
  void set_copy_gate(CopyGate gate) { copy_gate_ = std::move(gate); }
  // Called (on the receiving thread) when a copy of `region` arrived whole (its END
  // matched): the node may now make it its primary copy (a handover). Before the
  // messenger starts.
  void set_on_copy_complete(std::function<void(RegionId region)> done) { on_copy_complete_ = std::move(done); }

 private:
  AllocService(Messenger* messenger, Allocator* allocator, BackupRegions* backups, uint64_t max_unlogged_copy_bytes)
      : messenger_(messenger),
        allocator_(allocator),
        backups_(backups),
        copy_receiver_(backups, max_unlogged_copy_bytes) {}
  absl::Status RegisterHandlers();
  void OnRemoteAlloc(MsgThread& thread, const Message& message);
  void OnRemoteFree(MsgThread& thread, const Message& message);
  void OnBackupRegion(MsgThread& thread, const Message& message);
  void OnBlockState(MsgThread& thread, const Message& message);
  void OnRegionCapability(MsgThread& thread, const Message& message);
  // For a region this node does not hold as primary: Unavailable (ask again) when its
  // configuration makes it the region's primary and its copy is arriving — a handover is
  // under way — else `otherwise`.
  absl::Status NotHeld(RegionId region, absl::Status otherwise) const;
  void OnCopyBegin(MsgThread& thread, const Message& message);
  void OnCopyData(MsgThread& thread, const Message& message);
  void OnCopyEnd(MsgThread& thread, const Message& message);

  Messenger* const messenger_;
  Allocator* const allocator_;
  BackupRegions* const backups_;
  RegionCopyReceiver copy_receiver_;
  CopyGate copy_gate_;
  std::function<void(RegionId)> on_copy_complete_;
  std::vector<std::unique_ptr<ThreadLog>> logs_;
  std::vector<std::unique_ptr<MsgChannel>> channels_;
  std::vector<std::unique_ptr<ThreadAllocator>> threads_;
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_ALLOC_SERVICE_H_
