#include "farm/node/node_storage.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "farm/base/log.h"
#include "farm/base/mutex.h"
#include "farm/base/wire.h"
#include "farm/node/checkpointer.h"
#include "farm/storage/node_log_types.h"

namespace farm::node {
namespace {

constexpr absl::Duration kCheckpointPoll = absl::Milliseconds(200);
constexpr absl::Duration kCheckpointRetry = absl::Seconds(10);

}  // namespace

absl::StatusOr<std::unique_ptr<NodeStorage>> NodeStorage::Open(const NodeStorageOptions& options) {
  std::unique_ptr<storage::FileSystem> owned;
  storage::FileSystem* fs = options.file_system;
  if (fs == nullptr) {
    owned = storage::NewPosixFileSystem();
    fs = owned.get();
  }
  absl::StatusOr<storage::DataDirectory> dir =
      storage::DataDirectory::Open(fs, options.path, options.cluster, options.node_id);
  if (!dir.ok()) {
    return absl::Status(dir.status().code(),
                        absl::StrCat("data directory ", options.path, ": ", dir.status().message()));
  }
  std::unique_ptr<NodeStorage> s(new NodeStorage(options, std::move(owned), fs, std::move(*dir)));
  absl::StatusOr<storage::LogFiles> files = storage::ListLogFiles(fs, options.path);
  if (!files.ok()) return files.status();
  s->files_ = std::move(*files);
  absl::StatusOr<LogSet> read =
      ReadLogSet(fs, options.path, s->dir_.identity(), s->files_.checkpoint, s->files_.segments);
  if (!read.ok()) return read.status();
  s->read_ = std::move(*read);
  if (options.log_sync == "off") {
    if (!s->read_.records.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s holds a log of %d records; --log_sync=off would ignore them (use a durable --log_sync, or another "
          "--data_dir)", options.path, s->read_.records.size()));
    }
    return s;
  }
  absl::StatusOr<storage::SyncPolicy> policy = storage::SyncPolicy::Parse(options.log_sync);
  if (!policy.ok()) return policy.status();
  s->policy_ = *policy;
  if (s->read_.torn) {
    FARM_LOG(kWarning, "node %u: %s: torn tail after offset %d (%d bytes, a write the crash cut short) is cut off",
             options.node_id, s->read_.last_path, s->read_.last_valid_bytes,
             s->read_.bytes.back().size() - s->read_.last_valid_bytes);
  }
  return s;
}

NodeStorage::~NodeStorage() { Close(); }

absl::StatusOr<tx::ReplayResult> NodeStorage::Start(NodeId self, alloc::BackupRegions* copies) {
  if (!durable()) return tx::ReplayResult{};
  self_ = self;
  // What a crash during a checkpoint left behind; none of it is read. The directory is
  // synced first: a crash may have come between a checkpoint's rename and its sync,
  // and the files it replaced must not go before its name is durable.
  if (!files_.stale.empty()) {
    if (absl::Status s = fs_->SyncDir(options_.path); !s.ok()) return s;
  }
  for (const std::string& path : files_.stale) {
    if (absl::Status s = fs_->Remove(path); !s.ok()) {
      FARM_LOG(kWarning, "node %u: could not remove %s (left behind by a checkpoint): %s", self, path, s.ToString());
    }
  }
  const absl::Time began = absl::Now();
  absl::StatusOr<tx::ReplayResult> replay = tx::ReplayNodeLog(read_.records, self, tx::ReplayMode::kRestart, copies);
  if (!replay.ok()) return replay.status();
  replay_seconds_ = absl::ToDoubleSeconds(absl::Now() - began);
  replayed_ = replay->stats;
  if (!read_.records.empty()) {
    FARM_LOG(kInfo,
             "node %u: replayed %s%s in %.3f s: %d records, %d regions, %d transactions applied, %d discarded, "
             "%d in doubt",
             self, files_.checkpoint ? storage::CheckpointPath(options_.path, *files_.checkpoint) + " and " : "",
             read_.last_path, replay_seconds_, replayed_.records, replayed_.regions, replayed_.transactions_applied,
             replayed_.transactions_discarded, replay->in_doubt.size());
  }
  absl::StatusOr<std::unique_ptr<storage::LogWriter>> writer =
      storage::LogWriter::Open(fs_, read_.last_path, dir_.identity(), read_.last_valid_bytes, *policy_);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(*writer);
  {
    MutexLock lock(&mu_);
    checkpoint_ = files_.checkpoint;
    // read_.bytes: the checkpoint's (if any), then one per segment.
    const size_t first = files_.checkpoint ? 1 : 0;
    if (files_.checkpoint) checkpoint_file_bytes_ = read_.bytes[0].size();
    for (size_t i = 0; i + 1 < files_.segments.size(); ++i) {
      closed_.emplace_back(files_.segments[i], read_.bytes[first + i].size());
    }
    segment_ = files_.segments.back();
  }
  read_ = LogSet();  // the views into it are no longer needed

  boot_ = replay->boot + 1;
  replay->boot = boot_;
  // Durable before any transaction id of this start is used anywhere.
  Notification written;
  absl::Status boot_status;
  writer_->Append(storage::TypeByte(storage::NodeLogType::kBoot), tx::EncodeBoot(boot_),
                  [&](absl::Status s) {
                    boot_status = std::move(s);
                    written.Notify();
                  });
  written.WaitForNotification();
  if (!boot_status.ok()) return boot_status;
  // Decisions a crash kept from the log (replay applied these commits).
  for (uint64_t id : replay->presumed_committed) {
    writer_->AppendUnwaited(storage::TypeByte(storage::NodeLogType::kTxCommitted), WireWriter().Put(id).Take());
  }
  if (options_.checkpoint_bytes > 0) checkpointer_ = std::thread([this] { CheckpointLoop(); });
  return replay;
}

void NodeStorage::CheckpointLoop() {
  // Behind the workers: the replay is CPU the transactions need more.
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  absl::Duration wait = kCheckpointPoll;
  for (;;) {
    uint64_t since = 0, threshold = 0;
    {
      MutexLock lock(&mu_);
      cv_.WaitFor(&mu_, wait, [this] { return stop_.load(); });
      if (stop_.load()) return;
      for (const auto& [segment, bytes] : closed_) since += bytes;
      threshold = std::max(options_.checkpoint_bytes, checkpoint_file_bytes_);
    }
    since += writer_->stats().segment_bytes;
    wait = kCheckpointPoll;
    if (since < threshold || !writer_->status().ok()) continue;
    absl::Status s = TakeCheckpoint();
    if (s.ok() || absl::IsCancelled(s)) continue;
    FARM_LOG(kWarning, "node %u: checkpoint failed (the log is kept; trying again in %s): %s", self_,
             absl::FormatDuration(kCheckpointRetry), s.ToString());
    wait = kCheckpointRetry;
  }
}

absl::Status NodeStorage::CheckpointNow() {
  if (writer_ == nullptr) return absl::FailedPreconditionError("no log to checkpoint (--log_sync=off, or not started)");
  return TakeCheckpoint();
}

absl::Status NodeStorage::TakeCheckpoint() {
  MutexLock one(&checkpoint_mu_);
  CheckpointRequest request;
  request.fs = fs_;
  request.dir = options_.path;
  request.identity = dir_.identity();
  request.self = self_;
  request.stop = &stop_;
  uint64_t next = 0;
  {
    MutexLock lock(&mu_);
    next = segment_ + 1;
    request.previous = checkpoint_;
  }
  const uint64_t closing_bytes = writer_->stats().segment_bytes;
  if (absl::Status s = writer_->Rotate(storage::SegmentPath(options_.path, next)); !s.ok()) {
    MutexLock lock(&mu_);
    checkpoint_error_ = s.ToString();
    return s;
  }
  {
    MutexLock lock(&mu_);
    closed_.emplace_back(segment_, closing_bytes);
    segment_ = next;
    for (const auto& [segment, bytes] : closed_) request.segments.push_back(segment);
  }
  absl::StatusOr<CheckpointStats> built = BuildCheckpoint(request);
  if (!built.ok()) {
    MutexLock lock(&mu_);
    checkpoint_error_ = built.status().ToString();
    return built.status();
  }
  // The checkpoint is in place: what it replaces goes.
  std::vector<std::string> replaced;
  if (request.previous) replaced.push_back(storage::CheckpointPath(options_.path, *request.previous));
  for (uint64_t segment : request.segments) replaced.push_back(storage::SegmentPath(options_.path, segment));
  {
    MutexLock lock(&mu_);
    checkpoint_ = built->next_segment;
    checkpoint_file_bytes_ = built->bytes;
    closed_.clear();
    ++checkpoints_;
    last_checkpoint_seconds_ = built->seconds;
    last_checkpoint_at_ = absl::Now();
    checkpoint_error_.clear();
  }
  for (const std::string& path : replaced) {
    if (absl::Status s = fs_->Remove(path); !s.ok()) {
      FARM_LOG(kWarning, "node %u: could not remove %s after a checkpoint replaced it: %s", self_, path,
               s.ToString());
    }
  }
  (void)fs_->SyncDir(options_.path);
  FARM_LOG(kInfo,
           "node %u: checkpoint %s in %.3f s: %d bytes (%d of region images, %d regions, %d records carried, %d "
           "outcomes) replace %d bytes",
           self_, storage::CheckpointPath(options_.path, built->next_segment), built->seconds, built->bytes,
           built->image_bytes, built->regions, built->carried, built->outcomes, built->input_bytes);
  return absl::OkStatus();
}

LogState NodeStorage::State() const {
  LogState s;
  {
    MutexLock lock(&mu_);
    s.path = storage::SegmentPath(options_.path, segment_);
    for (const auto& [segment, bytes] : closed_) s.file_bytes += bytes;
    s.has_checkpoint = checkpoint_.has_value();
    s.last_checkpoint_segment = checkpoint_.value_or(0);
    s.checkpoint_bytes = checkpoint_file_bytes_;
    s.checkpoints = checkpoints_;
    s.last_checkpoint_seconds = last_checkpoint_seconds_;
    if (checkpoints_ > 0) s.last_checkpoint_age_seconds = absl::ToDoubleSeconds(absl::Now() - last_checkpoint_at_);
    s.checkpoint_error = checkpoint_error_;
  }
  s.policy = policy_.has_value() ? policy_->ToString() : "off";
  s.boot = boot_;
  s.replayed = replayed_;
  s.replay_seconds = replay_seconds_;
  if (writer_ != nullptr) {
    const storage::LogWriterStats w = writer_->stats();
    s.file_bytes += w.segment_bytes;
    s.records_written = w.records;
    s.syncs = w.syncs;
    if (absl::Status st = writer_->status(); !st.ok()) s.error = st.ToString();
  }
  return s;
}

void NodeStorage::Close() {
  {
    MutexLock lock(&mu_);
    stop_.store(true);
    cv_.SignalAll();
  }
  if (checkpointer_.joinable()) checkpointer_.join();
  if (writer_ != nullptr) writer_->Close();
}

}  // namespace farm::node
