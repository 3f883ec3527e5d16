#include "alloc/copy_receiver.h"

#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"

namespace farm::alloc {

absl::Status RegionCopyReceiver::Begin(NodeId from, const CopyBegin& begin) {
  MutexLock lock(&mu_);
  if (absl::Status s = copies_->Reset(begin.region, begin.bytes, from); !s.ok()) return s;
  in_progress_[begin.region] = InProgress{.from = from};
  incomplete_.insert(begin.region);
  return absl::OkStatus();
}

absl::Status RegionCopyReceiver::Data(NodeId from, const RegionImage& chunk) {
  MutexLock lock(&mu_);
  auto it = in_progress_.find(chunk.region);
  if (it == in_progress_.end() || it->second.from != from) {
    return absl::FailedPreconditionError(
        absl::StrFormat("no copy of region %d from node %d is in progress here (data at offset %d)",
                        chunk.region, from, chunk.offset));
  }
  InProgress& copy = it->second;
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
  return absl::OkStatus();
}

absl::Status RegionCopyReceiver::End(NodeId from, const CopyEnd& end) {
  MutexLock lock(&mu_);
  auto it = in_progress_.find(end.region);
  if (it == in_progress_.end() || it->second.from != from) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "no copy of region %d from node %d is in progress here to end", end.region, from));
  }
  const InProgress copy = it->second;
  in_progress_.erase(it);
  if (copy.bytes != end.bytes_sent || copy.crc != end.crc) {
    return absl::DataLossError(absl::StrFormat(
        "the copy of region %d from node %d does not match: node %d sent %d bytes (CRC-32C %08x), "
        "%d bytes arrived in %d chunks (CRC-32C %08x)",
        end.region, from, from, end.bytes_sent, end.crc, copy.bytes, copy.chunks, copy.crc));
  }
  incomplete_.erase(end.region);
  return absl::OkStatus();
}

void RegionCopyReceiver::Abandon(NodeId from, RegionId region) {
  MutexLock lock(&mu_);
  auto it = in_progress_.find(region);
  if (it != in_progress_.end() && it->second.from == from) in_progress_.erase(it);
}

bool RegionCopyReceiver::Complete(RegionId region) const {
  MutexLock lock(&mu_);
  return !incomplete_.contains(region);
}

size_t RegionCopyReceiver::in_progress() const {
  MutexLock lock(&mu_);
  return in_progress_.size();
}

}  // namespace farm::alloc
