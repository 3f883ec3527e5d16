#include "alloc/copy_receiver.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"

namespace farm::alloc {

absl::StatusOr<uint64_t> RegionCopyReceiver::Begin(NodeId from, const CopyBegin& begin) {
  Done replaced;
  uint64_t copy = 0;
  {
    MutexLock lock(&mu_);
    if (absl::Status s = copies_->Reset(begin.region, begin.bytes, from); !s.ok()) return s;
    if (in_progress_.contains(begin.region)) {
      replaced = FinishLocked(begin.region, /*complete=*/false);
    }
    copy = next_copy_++;
    in_progress_[begin.region] = InProgress{.from = from, .copy = copy};
    incomplete_.insert(begin.region);
  }
  if (replaced) {
    replaced(absl::AbortedError(absl::StrFormat("a new copy of region %d began (from node %d)", begin.region, from)));
  }
  return copy;
}

absl::StatusOr<CopyChunkAccepted> RegionCopyReceiver::Data(NodeId from, const RegionImage& chunk) {
  MutexLock lock(&mu_);
  auto it = in_progress_.find(chunk.region);
  if (it == in_progress_.end() || it->second.from != from || it->second.ended) {
    return absl::FailedPreconditionError(
        absl::StrFormat("no copy of region %d from node %d is in progress here (data at offset %d)",
                        chunk.region, from, chunk.offset));
  }
  InProgress& copy = it->second;
  if (!copy.log_error.ok()) return copy.log_error;
  if (chunk.bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "an empty chunk of region %d at offset %d from node %d", chunk.region, chunk.offset, from));
  }
  if (chunk.offset < copy.next_offset) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a chunk of region %d from node %d at offset %d starts before the end of "
                        "the previous one (%d)",
                        chunk.region, from, chunk.offset, copy.next_offset));
  }
  if (absl::Status s = copies_->WriteBytes(chunk.region, chunk.offset, chunk.bytes); !s.ok())
    return s;
  copy.next_offset = chunk.offset + chunk.bytes.size();
  copy.bytes += chunk.bytes.size();
  ++copy.chunks;
  copy.crc = Crc32cExtend(copy.crc, chunk.bytes);
  copy.unlogged_bytes += chunk.bytes.size();
  return CopyChunkAccepted{.ticket = {.region = chunk.region, .copy = copy.copy, .bytes = chunk.bytes.size()},
                           .answer_when_logged = copy.unlogged_bytes > max_unlogged_bytes_};
}

void RegionCopyReceiver::Logged(const CopyChunkTicket& chunk, const absl::Status& status) {
  Done ended;
  absl::Status outcome;
  {
    MutexLock lock(&mu_);
    auto it = in_progress_.find(chunk.region);
    if (it == in_progress_.end() || it->second.copy != chunk.copy) return;  // replaced meanwhile
    InProgress& copy = it->second;
    copy.unlogged_bytes -= chunk.bytes;
    if (!status.ok() && copy.log_error.ok()) {
      copy.log_error = absl::Status(status.code(), absl::StrFormat("a chunk of region %d from node %d not logged: %s",
                                                                   chunk.region, copy.from, status.message()));
    }
    if (!copy.ended || copy.unlogged_bytes > 0) return;
    outcome = copy.log_error;
    ended = FinishLocked(chunk.region, outcome.ok());
  }
  ended(outcome);
}

void RegionCopyReceiver::End(NodeId from, const CopyEnd& end, EndDone done) {
  absl::Status outcome;
  uint64_t number = 0;
  {
    MutexLock lock(&mu_);
    auto it = in_progress_.find(end.region);
    if (it == in_progress_.end() || it->second.from != from || it->second.ended) {
      outcome = absl::FailedPreconditionError(absl::StrFormat(
          "no copy of region %d from node %d is in progress here to end", end.region, from));
    } else {
      InProgress& copy = it->second;
      number = copy.copy;
      if (copy.bytes != end.bytes_sent || copy.crc != end.crc) {
        outcome = absl::DataLossError(absl::StrFormat(
            "the copy of region %d from node %d does not match: node %d sent %d bytes (CRC-32C %08x), "
            "%d bytes arrived in %d chunks (CRC-32C %08x)",
            end.region, from, from, end.bytes_sent, end.crc, copy.bytes, copy.chunks, copy.crc));
        (void)FinishLocked(end.region, /*complete=*/false);
      } else if (copy.unlogged_bytes > 0) {
        // Logged finishes it.
        copy.ended = [done = std::move(done), number](absl::Status s) mutable { done(std::move(s), number); };
        return;
      } else {
        outcome = copy.log_error;
        (void)FinishLocked(end.region, outcome.ok());
      }
    }
  }
  done(outcome, number);
}

RegionCopyReceiver::Done RegionCopyReceiver::FinishLocked(RegionId region, bool complete) {
  auto it = in_progress_.find(region);
  Done ended = std::move(it->second.ended);
  in_progress_.erase(it);
  if (complete) incomplete_.erase(region);
  return ended;
}

void RegionCopyReceiver::Abandon(NodeId from, RegionId region) {
  Done ended;
  {
    MutexLock lock(&mu_);
    auto it = in_progress_.find(region);
    if (it == in_progress_.end() || it->second.from != from) return;
    ended = FinishLocked(region, /*complete=*/false);
  }
  if (ended) ended(absl::AbortedError(absl::StrFormat("the copy of region %d was abandoned", region)));
}

bool RegionCopyReceiver::Complete(RegionId region) const {
  MutexLock lock(&mu_);
  return !incomplete_.contains(region);
}

void RegionCopyReceiver::MarkPartial(RegionId region) {
  MutexLock lock(&mu_);
  incomplete_.insert(region);
}

size_t RegionCopyReceiver::in_progress() const {
  MutexLock lock(&mu_);
  return in_progress_.size();
}

NodeId RegionCopyReceiver::Receiving(RegionId region) const {
  MutexLock lock(&mu_);
  auto it = in_progress_.find(region);
  return it == in_progress_.end() ? kInvalidNode : it->second.from;
}

}  // namespace farm::alloc
