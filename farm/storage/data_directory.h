// DataDirectory: a node's data directory and whose it is. The first start writes an
// identity file (FARMDATA: format version, cluster name, node id, CRC-32C) there; every
// later start checks it, so a node never reads or appends to another cluster's or
// another node's logs and checkpoints, nor to a format this build does not know.
//
//   Open on a directory without FARMDATA        creates it (written to a temporary
//                                               name, synced, renamed, directory synced)
//   FARMDATA of this cluster and node           OK
//   another cluster or node                     FailedPrecondition naming both
//   another format version                      FailedPrecondition naming both
//   damaged (checksum, size, magic)             DataLoss naming the file
#ifndef FARM_STORAGE_DATA_DIRECTORY_H_
#define FARM_STORAGE_DATA_DIRECTORY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "farm/storage/file_system.h"

namespace farm::storage {

inline constexpr uint32_t kDataFormat = 1;

class DataDirectory {
 public:
  static absl::StatusOr<DataDirectory> Open(FileSystem* fs, const std::string& path, const std::string& cluster,
                                            uint32_t node_id);

  const std::string& path() const { return path_; }
  // Whose logs these are: written into every log header (log_format.h), a hash of the
  // cluster name and the node id.
  uint64_t identity() const { return identity_; }
  // True when this Open created the identity file (a fresh directory).
  bool created() const { return created_; }

 private:
  DataDirectory(std::string path, uint64_t identity, bool created)
      : path_(std::move(path)), identity_(identity), created_(created) {}
  std::string path_;
  uint64_t identity_;
  bool created_;
};

}  // namespace farm::storage

#endif  // FARM_STORAGE_DATA_DIRECTORY_H_
