// FaultInjectingFileSystem: an in-memory FileSystem that remembers, per file, how much
// was synced, and can fail the way disks and machines fail — LevelDB's
// FaultInjectionTestEnv, for the crash-consistency tests of the logs and checkpoints:
//
//   CrashAtSync(k)   the k-th Sync from now does not happen: it fails, and so does every
//                    later call, as if the machine stopped there;
//   Restart()        what a restarted machine finds: every file cut to its synced size
//                    (bytes appended but not synced are gone), faults cleared;
//   FailNextAppend / FailNextSync (status)   one injected error;
//   set_capacity(bytes)   a disk of that size: an Append that does not fit fails
//                    ResourceExhausted and writes nothing.
// Names (creation, rename, removal) are durable at once: directory syncs are not
// modelled. Thread-safe.
#ifndef FARM_STORAGE_FAULT_INJECTING_FILE_SYSTEM_H_
#define FARM_STORAGE_FAULT_INJECTING_FILE_SYSTEM_H_

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "farm/base/mutex.h"
#include "farm/storage/file_system.h"

namespace farm::storage {

class FaultInjectingFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForAppend(const std::string& path) override;
  absl::StatusOr<std::string> ReadFile(const std::string& path) override;
  absl::Status Truncate(const std::string& path, uint64_t size) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Remove(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override;
  absl::Status CreateDir(const std::string& dir) override;
  absl::Status SyncDir(const std::string& dir) override;

  void CrashAtSync(int k);
  void Restart();
  void FailNextAppend(absl::Status error);
  void FailNextSync(absl::Status error);
  void set_capacity(uint64_t bytes);
  // Overwrites bytes of a file in place, synced (a damaged disk block).
  absl::Status Corrupt(const std::string& path, uint64_t offset, absl::string_view bytes);

  int syncs() const;
  bool crashed() const;
  uint64_t used() const;  // bytes in all files (what set_capacity limits)

 private:
  class File;
  struct Contents {
    std::string data;
    uint64_t synced = 0;
  };
  absl::Status Append(const std::string& path, absl::string_view data);
  absl::Status Sync(const std::string& path);
  uint64_t UsedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckAliveLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<Contents>> files_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> dirs_ ABSL_GUARDED_BY(mu_);
  std::optional<int> crash_at_sync_ ABSL_GUARDED_BY(mu_);
  int syncs_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status next_append_error_ ABSL_GUARDED_BY(mu_);
  absl::Status next_sync_error_ ABSL_GUARDED_BY(mu_);
  uint64_t capacity_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<uint64_t>::max();
};

}  // namespace farm::storage

#endif  // FARM_STORAGE_FAULT_INJECTING_FILE_SYSTEM_H_
