// A region's checkpoint file: a copy of a region's bytes taken while transactions go on
// (fuzzy: the chunks were copied at different moments), and the log position from which
// replaying the log makes it consistent. Written under a temporary name and renamed into
// place only when complete, so a checkpoint on disk is whole or absent.
//
//   header   "FaRMckpt" | format u32 (kCheckpointFormat) | reserved u32 |
//            identity u64 (as the log's) | region u32 | reserved u32 |
//            region bytes u64 | replay_from u64 (the log position replay starts at) |
//            crc32c u32 of the header before it | reserved u32
//   chunk    offset u64 | length u32 | crc32c u32 of the bytes | bytes      (any number)
//   trailer  "FaRMdone" | chunks u64 | crc32c u32 of every chunk crc in order | reserved u32
//
// ReadCheckpoint checks everything before returning anything: a missing trailer, a
// chunk outside the region, a failing checksum, another identity or format are errors
// naming the file (the caller then uses an older checkpoint, or none).
#ifndef FARM_STORAGE_CHECKPOINT_FILE_H_
#define FARM_STORAGE_CHECKPOINT_FILE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/storage/file_system.h"

namespace farm::storage {

inline constexpr uint32_t kCheckpointFormat = 1;

struct CheckpointInfo {
  uint64_t identity = 0;
  uint32_t region = 0;
  uint64_t region_bytes = 0;
  uint64_t replay_from = 0;
};

class CheckpointWriter {
 public:
  // Starts `final_path` (written as final_path + ".tmp").
  static absl::StatusOr<std::unique_ptr<CheckpointWriter>> Start(FileSystem* fs, std::string final_path,
                                                                 const CheckpointInfo& info);
  // The bytes at `offset` of the region (within it).
  absl::Status AddChunk(uint64_t offset, absl::string_view bytes);
  // Trailer, sync, rename into place, sync the directory. Nothing usable before it.
  absl::Status Finish();

 private:
  CheckpointWriter(FileSystem* fs, std::string final_path, std::unique_ptr<WritableFile> file, CheckpointInfo info)
      : fs_(fs), final_path_(std::move(final_path)), file_(std::move(file)), info_(info) {}
  FileSystem* const fs_;
  const std::string final_path_;
  std::unique_ptr<WritableFile> file_;
  const CheckpointInfo info_;
  uint64_t chunks_ = 0;
  uint32_t chunk_crcs_ = 0;  // CRC-32C over the chunks' CRCs, in order
  bool finished_ = false;
};

struct Checkpoint {
  CheckpointInfo info;
  struct Chunk {
    uint64_t offset;
    std::string bytes;
  };
  std::vector<Chunk> chunks;
};

// Reads and checks a complete checkpoint; `identity` must match its header's.
absl::StatusOr<Checkpoint> ReadCheckpoint(FileSystem* fs, const std::string& path, uint64_t identity);

}  // namespace farm::storage

#endif  // FARM_STORAGE_CHECKPOINT_FILE_H_
