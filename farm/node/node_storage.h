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
// --log_sync=off keeps no log at all (in-process tools and tests: nothing survives the
// process); it refuses a directory whose log holds records, which it would ignore.
//
// Threads: Open and Start on the node's start-up thread; log() from any thread; Close
// once, after every worker has stopped appending.
#ifndef FARM_NODE_NODE_STORAGE_H_
#define FARM_NODE_NODE_STORAGE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "alloc/backup_regions.h"
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
  // The disk; null for the real one (tests put a fault-injecting one here).
  storage::FileSystem* file_system = nullptr;
};

// What farm_admin shows of a node's log.
struct LogState {
  std::string path;
  std::string policy;
  uint64_t file_bytes = 0;   // header and whole records, as of the last write
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
  // Writes and syncs what is queued; later appends fail.
  void Close();

 private:
  NodeStorage(NodeStorageOptions options, std::unique_ptr<storage::FileSystem> owned, storage::FileSystem* fs,
              storage::DataDirectory dir)
      : options_(std::move(options)), owned_fs_(std::move(owned)), fs_(fs), dir_(std::move(dir)) {}

  const NodeStorageOptions options_;
  std::unique_ptr<storage::FileSystem> owned_fs_;
  storage::FileSystem* const fs_;
  const storage::DataDirectory dir_;
  std::optional<storage::SyncPolicy> policy_;  // empty: --log_sync=off
  std::string log_path_;
  std::string log_bytes_;  // the log as read at Open (its records are views into it)
  storage::ParsedLog parsed_;
  std::unique_ptr<storage::LogWriter> writer_;
  uint32_t boot_ = 0;
  tx::ReplayStats replayed_;
  double replay_seconds_ = 0;
};

}  // namespace farm::node

#endif  // FARM_NODE_NODE_STORAGE_H_
