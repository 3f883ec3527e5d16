#include "farm/node/node_storage.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "farm/base/log.h"
#include "farm/base/mutex.h"
#include "farm/storage/node_log_types.h"

namespace farm::node {

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
  s->log_path_ = absl::StrCat(options.path, "/log");
  absl::StatusOr<std::string> bytes = fs->ReadFile(s->log_path_);
  if (!bytes.ok() && !absl::IsNotFound(bytes.status())) return bytes.status();
  if (bytes.ok()) s->log_bytes_ = std::move(*bytes);
  absl::StatusOr<storage::ParsedLog> parsed =
      storage::ParseLog(s->log_bytes_, s->dir_.identity(), s->log_path_);
  if (!parsed.ok()) return parsed.status();
  s->parsed_ = std::move(*parsed);
  if (options.log_sync == "off") {
    if (!s->parsed_.records.empty()) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s holds %d records; --log_sync=off would ignore them (use a durable --log_sync, or another "
          "--data_dir)", s->log_path_, s->parsed_.records.size()));
    }
    return s;
  }
  absl::StatusOr<storage::SyncPolicy> policy = storage::SyncPolicy::Parse(options.log_sync);
  if (!policy.ok()) return policy.status();
  s->policy_ = *policy;
  if (s->parsed_.torn) {
    FARM_LOG(kWarning, "node %u: %s: torn tail after offset %d (%d bytes, a write the crash cut short) is cut off",
             options.node_id, s->log_path_, s->parsed_.valid_bytes, s->log_bytes_.size() - s->parsed_.valid_bytes);
  }
  return s;
}

NodeStorage::~NodeStorage() { Close(); }

absl::StatusOr<tx::ReplayResult> NodeStorage::Start(NodeId self, alloc::BackupRegions* copies) {
  if (!durable()) return tx::ReplayResult{};
  const absl::Time began = absl::Now();
  absl::StatusOr<tx::ReplayResult> replay = tx::ReplayNodeLog(parsed_.records, log_path_, self, copies);
  if (!replay.ok()) return replay.status();
  replay_seconds_ = absl::ToDoubleSeconds(absl::Now() - began);
  replayed_ = replay->stats;
  if (!parsed_.records.empty()) {
    FARM_LOG(kInfo,
             "node %u: replayed %s in %.3f s: %d records, %d regions, %d transactions applied, %d discarded, "
             "%d in doubt",
             self, log_path_, replay_seconds_, replayed_.records, replayed_.regions,
             replayed_.transactions_applied, replayed_.transactions_discarded, replay->in_doubt.size());
  }
  absl::StatusOr<std::unique_ptr<storage::LogWriter>> writer =
      storage::LogWriter::Open(fs_, log_path_, dir_.identity(), parsed_.valid_bytes, *policy_);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(*writer);
  // The views into the old bytes are no longer needed.
  parsed_.records.clear();
  std::string().swap(log_bytes_);

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
  return replay;
}

LogState NodeStorage::State() const {
  LogState s;
  s.path = log_path_;
  s.policy = policy_.has_value() ? policy_->ToString() : "off";
  s.boot = boot_;
  s.replayed = replayed_;
  s.replay_seconds = replay_seconds_;
  if (writer_ != nullptr) {
    const storage::LogWriterStats w = writer_->stats();
    s.file_bytes = std::max<uint64_t>(parsed_.valid_bytes, storage::kLogHeaderBytes) + w.bytes;
    s.records_written = w.records;
    s.syncs = w.syncs;
    if (absl::Status st = writer_->status(); !st.ok()) s.error = st.ToString();
  }
  return s;
}

void NodeStorage::Close() {
  if (writer_ != nullptr) writer_->Close();
}

}  // namespace farm::node
