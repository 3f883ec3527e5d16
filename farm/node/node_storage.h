// NodeStorage: a node's data directory across starts — its identity checked
// (storage/data_directory.h), its log read and replayed into the node's region copies
// (tx/recovery.h), the log reopened for appending, and each start recorded in it.
//
//   Open     (Node::Create) the directory is this node's; the log, when there is one,
//            parses (a torn tail is noted and cut off before appending, with one log
//            line; a corrupt record before the tail, another node's or cluster's log, or
//            another format fails here, naming the file and offset).
//   Start    (Node::Start) replays the log into `copies`, opens the writer, and appends
//            this start's kBoot record, durable before Start returns.
//
// The log is the newest checkpoint and the segments after it (storage/log_files.h). A
// checkpointer thread (at low priority) rotates the writer to a new segment and builds
// a checkpoint from the closed files (checkpointer.h) once the segments since the last
// checkpoint hold `checkpoint_bytes`, or as many bytes as that checkpoint if it is
// larger — the log is then about half the directory, the paper's cleaning point — and
// removes the files it replaces. A failed checkpoint loses nothing (the files it would
// replace stay) and is tried again later.
//
// --log_sync=off keeps no log at all (in-process tools and tests: nothing survives the
// process); it refuses a directory whose log holds records, which it would ignore.
//
// Threads: Open and Start on the node's start-up thread; log() from any thread; Close
// once, after every worker has stopped appending.
#ifndef FARM_NODE_NODE_STORAGE_H_
#define FARM_NODE_NODE_STORAGE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <utility>
#include <vector>
#include <optional>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "alloc/backup_regions.h"
#include "farm/base/mutex.h"
#include "farm/node/log_set.h"
#include "farm/storage/log_files.h"
#include "farm/storage/data_directory.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_writer.h"
#include "tx/recovery.h"

namespace farm::node {

struct NodeStorageOptions {
  std::string path;
  std::string cluster;
  NodeId node_id = 0;
  std::string log_sync = "always";  // always, interval:MS, none, off
  uint64_t checkpoint_bytes = 256ull << 20;  // 0: no checkpoints
  // The disk; null for the real one (tests put a fault-injecting one here).
  storage::FileSystem* file_system = nullptr;
};

// What farm_admin shows of a node's log.
struct LogState {
  std::string path;          // the segment being appended to
  std::string policy;
  uint64_t file_bytes = 0;   // every segment since the last checkpoint: header and whole records
  uint64_t checkpoint_bytes = 0;  // the last checkpoint's file
  uint64_t checkpoints = 0;       // taken since this start
  uint64_t last_checkpoint_segment = 0;  // it is checkpoint.<this> (0 and no checkpoints: none)
  bool has_checkpoint = false;
  double last_checkpoint_seconds = 0;  // to build it
  double last_checkpoint_age_seconds = 0;
  std::string checkpoint_error;        // the last attempt's failure, if it failed
  uint64_t records_written = 0;  // this start
  uint64_t syncs = 0;
  uint32_t boot = 0;
  tx::ReplayStats replayed;
  double replay_seconds = 0;
  std::string error;  // the log's failure, if it failed
};

class NodeStorage {
 public:
  static absl::StatusOr<std::unique_ptr<NodeStorage>> Open(const NodeStorageOptions& options);
  ~NodeStorage();

  // Replays the log into `copies` (empty); returns what recovery needs (in-doubt
  // transactions, outcomes, this start's boot number in `boot`).
  absl::StatusOr<tx::ReplayResult> Start(NodeId self, alloc::BackupRegions* copies);

  bool durable() const { return policy_.has_value(); }
  // The log, or null with --log_sync=off. After Start.
  storage::RecordLog* log() const { return writer_.get(); }
  LogState State() const;
  // `listener` hears the log fail for good (LogWriter::OnFailure: once, with the log's
  // locks held — hand off only). Nothing with --log_sync=off. After Start.
  void OnLogFailure(absl::AnyInvocable<void(const absl::Status&)> listener) {
    if (writer_ != nullptr) writer_->OnFailure(std::move(listener));
  }
  // The log's failure for good, if it failed (OK without a log, or before Start).
  absl::Status LogStatus() const { return writer_ != nullptr ? writer_->status() : absl::OkStatus(); }
  // Takes a checkpoint now (tests; the checkpointer thread does this by itself).
  absl::Status CheckpointNow();
  // Stops the checkpointer, writes and syncs what is queued; later appends fail.
  void Close();

 private:
  NodeStorage(NodeStorageOptions options, std::unique_ptr<storage::FileSystem> owned, storage::FileSystem* fs,
              storage::DataDirectory dir)
      : options_(std::move(options)), owned_fs_(std::move(owned)), fs_(fs), dir_(std::move(dir)) {}

  void CheckpointLoop();
  absl::Status TakeCheckpoint();

  const NodeStorageOptions options_;
  std::unique_ptr<storage::FileSystem> owned_fs_;
  storage::FileSystem* const fs_;
  const storage::DataDirectory dir_;
  std::optional<storage::SyncPolicy> policy_;  // empty: --log_sync=off
  storage::LogFiles files_;  // as found at Open
  LogSet read_;              // the log as read at Open (released after replay)
  std::unique_ptr<storage::LogWriter> writer_;
  uint32_t boot_ = 0;
  tx::ReplayStats replayed_;
  double replay_seconds_ = 0;
  NodeId self_ = 0;

  // The checkpointer's: segments and checkpoint on disk.
  mutable Mutex mu_;
  CondVar cv_;
  std::atomic<bool> stop_{false};
  std::thread checkpointer_;
  Mutex checkpoint_mu_;  // one checkpoint at a time (thread or CheckpointNow)
  std::optional<uint64_t> checkpoint_ ABSL_GUARDED_BY(mu_);  // N of checkpoint.N
  uint64_t checkpoint_file_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t segment_ ABSL_GUARDED_BY(mu_) = 0;  // being appended to
  std::vector<std::pair<uint64_t, uint64_t>> closed_ ABSL_GUARDED_BY(mu_);  // (segment, bytes) since the checkpoint
  uint64_t checkpoints_ ABSL_GUARDED_BY(mu_) = 0;
  double last_checkpoint_seconds_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time last_checkpoint_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::string checkpoint_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace farm::node

#endif  // FARM_NODE_NODE_STORAGE_H_
