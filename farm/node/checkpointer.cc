#include "farm/node/checkpointer.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "alloc/backup_regions.h"
#include "alloc/durable_records.h"
#include "alloc/region_ranges.h"
#include "farm/node/log_set.h"
#include "farm/storage/log_files.h"
#include "farm/storage/log_format.h"
#include "farm/storage/node_log_types.h"
#include "tx/recovery.h"

namespace farm::node {
namespace {

using storage::NodeLogType;
using storage::TypeByte;

constexpr uint64_t kImageChunkBytes = 1 << 20;
constexpr size_t kWriteBytes = 4 << 20;
constexpr size_t kOutcomesPerRecord = 4096;

bool AllZero(const char* p, size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

// Appends records to the checkpoint file in large writes.
class CheckpointFile {
 public:
  CheckpointFile(std::unique_ptr<storage::WritableFile> file, uint64_t identity)
      : file_(std::move(file)), buffer_(storage::EncodeLogHeader(identity)) {}
  absl::Status Add(NodeLogType type, absl::string_view payload) {
    if (payload.size() > storage::kMaxRecordBytes) {
      return absl::InvalidArgumentError(absl::StrCat("a checkpoint record of ", payload.size(),
                                                     " bytes is over the log's limit of ", storage::kMaxRecordBytes));
    }
    storage::EncodeRecord(TypeByte(type), payload, &buffer_);
    ++records_;
    return buffer_.size() >= kWriteBytes ? Flush() : absl::OkStatus();
  }
  absl::Status Flush() {
    absl::Status s = file_->Append(buffer_);
    buffer_.clear();
    return s;
  }
  absl::Status Sync() { return file_->Sync(); }
  uint64_t records() const { return records_; }
  uint64_t size() const { return file_->size() + buffer_.size(); }

 private:
  std::unique_ptr<storage::WritableFile> file_;
  std::string buffer_;
  uint64_t records_ = 0;
};

absl::Status Cancelled(const CheckpointRequest& r) {
  return r.stop != nullptr && r.stop->load(std::memory_order_relaxed)
             ? absl::CancelledError("the node is stopping")
             : absl::OkStatus();
}

absl::Status WriteContents(const CheckpointRequest& request, const tx::ReplayResult& replay,
                           const alloc::BackupRegions& scratch, CheckpointFile* out,
                           CheckpointStats* stats) {
  if (replay.boot > 0) {
    if (absl::Status s = out->Add(NodeLogType::kBoot, tx::EncodeBoot(replay.boot)); !s.ok())
      return s;
  }
  std::vector<std::pair<std::string, std::string>> metadata(replay.metadata.begin(),
                                                            replay.metadata.end());
  std::sort(metadata.begin(), metadata.end());
  for (const auto& [name, value] : metadata) {
    if (absl::Status s = out->Add(NodeLogType::kMetadata, tx::EncodeMetadata(name, value)); !s.ok())
      return s;
  }
  std::vector<RegionId> regions = scratch.Held();
  std::sort(regions.begin(), regions.end());
  for (RegionId id : regions) {
    const Region* copy = scratch.Find(id);
    alloc::RegionCreated created{id, copy->size(), scratch.CreatorOf(id)};
    // A partial copy stays one: reset (and never copied) replays as partial. Its number
    // stays too, so that its own kRegionCopied, in a later segment, still ends it.
    const auto number = replay.partial_copy_numbers.find(id);
    const bool partial = number != replay.partial_copy_numbers.end();
    if (partial) created.copy = number->second;
    if (absl::Status s = out->Add(partial ? NodeLogType::kRegionReset : NodeLogType::kRegionCreated,
                                  alloc::EncodeRegionCreated(created));
        !s.ok()) {
      return s;
    }
    ++stats->regions;
    for (const auto& [begin, end] : alloc::WrittenRanges(*copy)) {
      for (uint64_t at = begin; at < end; at += kImageChunkBytes) {
        if (absl::Status s = Cancelled(request); !s.ok()) return s;
        const uint64_t n = std::min(kImageChunkBytes, end - at);
        const char* bytes = copy->base() + at;
        if (AllZero(bytes, n)) continue;
        absl::Status s = out->Add(NodeLogType::kRegionImage,
                                  tx::EncodeRegionImage(id, at, absl::string_view(bytes, n)));
        if (!s.ok()) return s;
        stats->image_bytes += n;
      }
    }
    if (auto due = replay.copies_due.find(id); due != replay.copies_due.end()) {
      if (absl::Status s = out->Add(NodeLogType::kRegionCopiesDue, alloc::EncodeCopiesDue(id, due->second)); !s.ok())
        return s;
    }
  }
  for (const storage::LogRecordView& r : replay.carried) {
    if (absl::Status s = out->Add(static_cast<NodeLogType>(r.type), r.payload); !s.ok()) return s;
    ++stats->carried;
  }
  const std::vector<tx::TxKey>& committed = replay.committed_prepared;
  for (size_t first = 0; first < committed.size(); first += kOutcomesPerRecord) {
    const size_t n = std::min(kOutcomesPerRecord, committed.size() - first);
    absl::Status s =
        out->Add(NodeLogType::kTxOutcomes,
                 tx::EncodeTxOutcomes(absl::MakeConstSpan(committed).subspan(first, n)));
    if (!s.ok()) return s;
  }
  stats->outcomes = committed.size();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CheckpointStats> BuildCheckpoint(const CheckpointRequest& request) {
  const absl::Time began = absl::Now();
  if (request.segments.empty())
    return absl::InvalidArgumentError("a checkpoint needs a closed segment");
  CheckpointStats stats;
  stats.next_segment = request.segments.back() + 1;
  absl::StatusOr<LogSet> set =
      ReadLogSet(request.fs, request.dir, request.identity, request.previous, request.segments);
  if (!set.ok()) return set.status();
  stats.input_bytes = set->file_bytes;
  alloc::BackupRegions scratch(request.region_options);
  absl::StatusOr<tx::ReplayResult> replay =
      tx::ReplayNodeLog(set->records, request.self, tx::ReplayMode::kCompact, &scratch);
  if (!replay.ok()) return replay.status();
  if (absl::Status s = Cancelled(request); !s.ok()) return s;

  const std::string path = storage::CheckpointPath(request.dir, stats.next_segment);
  const std::string tmp = path + ".tmp";
  (void)request.fs->Remove(tmp);  // one a crash cut short
  absl::StatusOr<std::unique_ptr<storage::WritableFile>> opened = request.fs->OpenForAppend(tmp);
  if (!opened.ok()) return opened.status();
  CheckpointFile out(std::move(*opened), request.identity);
  absl::Status s = WriteContents(request, *replay, scratch, &out, &stats);
  if (s.ok())
    s = out.Add(NodeLogType::kCheckpointEnd,
                tx::EncodeCheckpointEnd(stats.next_segment, out.records()));
  if (s.ok()) s = out.Flush();
  if (s.ok()) s = out.Sync();
  if (s.ok()) s = request.fs->Rename(tmp, path);
  if (s.ok()) s = request.fs->SyncDir(request.dir);
  if (!s.ok()) {
    (void)request.fs->Remove(tmp);
    return absl::Status(s.code(), absl::StrCat("writing ", path, ": ", s.message()));
  }
  stats.bytes = out.size();
  stats.seconds = absl::ToDoubleSeconds(absl::Now() - began);
  return stats;
}

}  // namespace farm::node
