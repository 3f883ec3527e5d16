#include "farm/node/test_faults.h"

#include <signal.h>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace farm::node {

// The real disk, whose syncs all fail once armed (a disk gone bad under the log).
class TestFaults::FailingSyncs final : public storage::FileSystem {
 public:
  FailingSyncs() : disk_(storage::NewPosixFileSystem()) {}

  void Arm() { armed_.store(true, std::memory_order_release); }

  absl::StatusOr<std::unique_ptr<storage::WritableFile>> OpenForAppend(const std::string& path) override {
    absl::StatusOr<std::unique_ptr<storage::WritableFile>> file = disk_->OpenForAppend(path);
    if (!file.ok()) return file;
    return std::unique_ptr<storage::WritableFile>(std::make_unique<File>(std::move(*file), &armed_));
  }
  absl::StatusOr<std::string> ReadFile(const std::string& path) override { return disk_->ReadFile(path); }
  absl::Status Truncate(const std::string& path, uint64_t size) override { return disk_->Truncate(path, size); }
  absl::Status Rename(const std::string& from, const std::string& to) override { return disk_->Rename(from, to); }
  absl::Status Remove(const std::string& path) override { return disk_->Remove(path); }
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override { return disk_->List(dir); }
  absl::Status CreateDir(const std::string& dir) override { return disk_->CreateDir(dir); }
  absl::Status SyncDir(const std::string& dir) override {
    if (armed_.load(std::memory_order_acquire)) return Injected();
    return disk_->SyncDir(dir);
  }

 private:
  static absl::Status Injected() {
    return absl::DataLossError("injected by --test_fault=log-fails-on-signal: the disk failed a sync");
  }

  class File final : public storage::WritableFile {
   public:
    File(std::unique_ptr<storage::WritableFile> file, const std::atomic<bool>* armed)
        : file_(std::move(file)), armed_(armed) {}
    absl::Status Append(absl::string_view data) override { return file_->Append(data); }
    absl::Status Sync() override {
      if (armed_->load(std::memory_order_acquire)) return Injected();
      return file_->Sync();
    }
    uint64_t size() const override { return file_->size(); }

   private:
    std::unique_ptr<storage::WritableFile> file_;
    const std::atomic<bool>* armed_;
  };

  std::unique_ptr<storage::FileSystem> disk_;
  std::atomic<bool> armed_{false};
};

TestFaults::TestFaults() = default;
TestFaults::~TestFaults() = default;

bool TestFaults::Trigger() {
  if (disk_ == nullptr) return false;
  disk_->Arm();
  return true;
}

namespace {

// A single-machine commit writing two or more objects sends its record only to its first
// backup (`first`) or its last, and the process dies once that backup acknowledged it.
void CrashAfterOneBackup(NodeOptions* options, bool first) {
  options->tx.replication_hook = [first](tx::ReplicationEvent event, const tx::LogRecord& record,
                                         absl::Span<const NodeId> backups, NodeId backup) {
    if (record.entries.size() < 2 || backups.empty()) return true;
    if (backup != (first ? backups.front() : backups.back())) return false;
    if (event == tx::ReplicationEvent::kAcknowledged) ::raise(SIGKILL);
    return true;
  };
}

}  // namespace

absl::StatusOr<std::unique_ptr<TestFaults>> SetTestFaults(absl::string_view names, NodeOptions* options) {
  auto faults = std::make_unique<TestFaults>();
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    if (name == "single-machine-crash") {
      CrashAfterOneBackup(options, /*first=*/false);
    } else if (name == "single-machine-crash-first") {
      CrashAfterOneBackup(options, /*first=*/true);
    } else if (name == "hold-region-copies") {
      options->hold_region_copies = true;
    } else if (name == "log-fails-on-signal") {
      faults->disk_ = std::make_unique<TestFaults::FailingSyncs>();
      options->file_system = faults->disk_.get();
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown test fault '%s' (known: single-machine-crash, single-machine-crash-first, hold-region-copies, "
          "log-fails-on-signal)",
          name));
    }
  }
  return faults;
}

}  // namespace farm::node
