// FileSystem: how the durable layers (transaction logs, checkpoints) reach files, so that
// a test can put a fault-injecting implementation (fault_injecting_file_system.h) in
// the place of the disk: drop whatever was not synced, fail a write or a sync, fill up.
//
// Contracts for every implementation:
//   - WritableFile::Append adds bytes at the end; they are durable only once a later
//     Sync returned OK. A failed Append may have written a prefix of its bytes.
//   - Sync is fdatasync: the file's data and size, not necessarily its directory entry
//     (SyncDir makes created, renamed or removed names durable).
//   - Rename replaces `to` atomically.
//   - A full disk is ResourceExhausted; other I/O errors keep their errno's code.
// Threads: a FileSystem may be used from any thread; one WritableFile from one thread
// at a time.
#ifndef FARM_STORAGE_FILE_SYSTEM_H_
#define FARM_STORAGE_FILE_SYSTEM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::storage {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  virtual absl::Status Append(absl::string_view data) = 0;
  virtual absl::Status Sync() = 0;
  // Bytes in the file, appended ones included (synced or not).
  virtual uint64_t size() const = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  // Opens `path` for appending at its end, creating it (empty) when missing.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenForAppend(const std::string& path) = 0;
  // The whole file. NotFound when it does not exist.
  virtual absl::StatusOr<std::string> ReadFile(const std::string& path) = 0;
  // Cuts the file to `size` bytes (durably: the caller syncs nothing more for it).
  virtual absl::Status Truncate(const std::string& path, uint64_t size) = 0;
  virtual absl::Status Rename(const std::string& from, const std::string& to) = 0;
  virtual absl::Status Remove(const std::string& path) = 0;
  // Names (not paths) in `dir`, sorted. NotFound when it does not exist.
  virtual absl::StatusOr<std::vector<std::string>> List(const std::string& dir) = 0;
  // Creates `dir` and its parents; OK when it exists.
  virtual absl::Status CreateDir(const std::string& dir) = 0;
  virtual absl::Status SyncDir(const std::string& dir) = 0;
};

// The real disk (POSIX calls).
std::unique_ptr<FileSystem> NewPosixFileSystem();

}  // namespace farm::storage

#endif  // FARM_STORAGE_FILE_SYSTEM_H_
