#include "absl/strings/str_format.h"
#include "alloc/epoch.h"
#include "alloc/thread_channel.h"
#include "farm/event/event_loop.h"

namespace farm::alloc {
namespace {

absl::Status NoPeers(absl::string_view what, NodeId node) {
  return absl::UnavailableError(
      absl::StrFormat("%s node %d: this allocator has no messaging (a single machine)", what, node));
}

}  // namespace

void LocalChannel::ReplicateRegion(std::span<const NodeId> backups, RegionId region,
                                   uint64_t bytes, StatusDone done) {
  done(backups.empty() ? absl::OkStatus() : NoPeers("replicating a region to", backups[0]));
}

void LocalChannel::ReplicateBlockWords(std::span<const NodeId> backups, RegionId region,
                                       uint32_t first_unit, std::span<const uint64_t> words,
                                       StatusDone done) {
  done(backups.empty() ? absl::OkStatus() : NoPeers("replicating a block to", backups[0]));
}

void LocalChannel::AllocateRemote(NodeId primary, uint32_t payload, Addr hint, PtrDone done) {
  done(NoPeers("allocating on", primary));
}

void LocalChannel::FreeRemote(NodeId primary, FatPtr object, StatusDone done) {
  done(NoPeers("freeing on", primary));
}

void LocalChannel::EndOfEpochRound(std::vector<NodeId> members, StatusDone done) {
  epochs_->AwaitQuiescence(loop_, [done = std::move(done)]() mutable { done(absl::OkStatus()); });
}

}  // namespace farm::alloc
