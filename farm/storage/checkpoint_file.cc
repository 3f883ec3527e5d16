#include "farm/storage/checkpoint_file.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"
#include "farm/base/wire.h"

namespace farm::storage {
namespace {

constexpr char kMagic[8] = {'F', 'a', 'R', 'M', 'c', 'k', 'p', 't'};
constexpr char kDone[8] = {'F', 'a', 'R', 'M', 'd', 'o', 'n', 'e'};
constexpr size_t kHeaderBytes = 56;
constexpr size_t kChunkHeaderBytes = 16;
constexpr size_t kTrailerBytes = 24;

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

uint32_t CrcOfCrc(uint32_t running, uint32_t crc) {
  char bytes[4];
  StoreLe(bytes, crc);
  return Crc32cExtend(running, absl::string_view(bytes, 4));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointWriter>> CheckpointWriter::Start(FileSystem* fs, std::string final_path,
                                                                          const CheckpointInfo& info) {
  const std::string tmp = final_path + ".tmp";
  (void)fs->Remove(tmp);  // a checkpoint that died half way
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenForAppend(tmp);
  if (!file.ok()) return file.status();
  std::string header(kMagic, sizeof(kMagic));
  WireWriter(&header)
      .Put<uint32_t>(kCheckpointFormat)
      .Put<uint32_t>(0)
      .Put<uint64_t>(info.identity)
      .Put<uint32_t>(info.region)
      .Put<uint32_t>(0)
      .Put<uint64_t>(info.region_bytes)
      .Put<uint64_t>(info.replay_from);
  WireWriter(&header).Put<uint32_t>(Crc32c(header)).Put<uint32_t>(0);
  if (absl::Status s = (*file)->Append(header); !s.ok()) return s;
  return std::unique_ptr<CheckpointWriter>(new CheckpointWriter(fs, std::move(final_path), std::move(*file), info));
}

absl::Status CheckpointWriter::AddChunk(uint64_t offset, absl::string_view bytes) {
  if (finished_) return absl::FailedPreconditionError("the checkpoint is finished");
  if (offset > info_.region_bytes || bytes.size() > info_.region_bytes - offset || bytes.size() > UINT32_MAX) {
    return absl::OutOfRangeError(absl::StrFormat("chunk [%d, +%d) outside the region of %d bytes", offset,
                                                 bytes.size(), info_.region_bytes));
  }
  const uint32_t crc = Crc32c(bytes);
  std::string head;
  WireWriter(&head).Put<uint64_t>(offset).Put<uint32_t>(static_cast<uint32_t>(bytes.size())).Put<uint32_t>(crc);
  if (absl::Status s = file_->Append(head); !s.ok()) return s;
  if (absl::Status s = file_->Append(bytes); !s.ok()) return s;
  ++chunks_;
  chunk_crcs_ = CrcOfCrc(chunk_crcs_, crc);
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError("the checkpoint is finished");
  finished_ = true;
  std::string trailer(kDone, sizeof(kDone));
  WireWriter(&trailer).Put<uint64_t>(chunks_).Put<uint32_t>(chunk_crcs_).Put<uint32_t>(0);
  if (absl::Status s = file_->Append(trailer); !s.ok()) return s;
  if (absl::Status s = file_->Sync(); !s.ok()) return s;
  file_.reset();
  if (absl::Status s = fs_->Rename(final_path_ + ".tmp", final_path_); !s.ok()) return s;
  return fs_->SyncDir(Dirname(final_path_));
}

absl::StatusOr<Checkpoint> ReadCheckpoint(FileSystem* fs, const std::string& path, uint64_t identity) {
  absl::StatusOr<std::string> file = fs->ReadFile(path);
  if (!file.ok()) return file.status();
  const absl::string_view b = *file;
  auto bad = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat("checkpoint ", path, ": ", why));
  };
  if (b.size() < kHeaderBytes + kTrailerBytes || b.substr(0, 8) != absl::string_view(kMagic, 8)) {
    return bad("not a checkpoint");
  }
  if (LoadLe<uint32_t>(b.data() + 48) != Crc32c(b.substr(0, 48))) return bad("the header fails its checksum");
  Checkpoint c;
  const uint32_t format = LoadLe<uint32_t>(b.data() + 8);
  c.info.identity = LoadLe<uint64_t>(b.data() + 16);
  c.info.region = LoadLe<uint32_t>(b.data() + 24);
  c.info.region_bytes = LoadLe<uint64_t>(b.data() + 32);
  c.info.replay_from = LoadLe<uint64_t>(b.data() + 40);
  if (format != kCheckpointFormat) {
    return absl::FailedPreconditionError(absl::StrFormat("checkpoint %s: format %d, this build reads format %d",
                                                         path, format, kCheckpointFormat));
  }
  if (c.info.identity != identity) {
    return absl::FailedPreconditionError(absl::StrCat("checkpoint ", path, " belongs to another cluster or node"));
  }
  const absl::string_view trailer = b.substr(b.size() - kTrailerBytes);
  if (trailer.substr(0, 8) != absl::string_view(kDone, 8)) return bad("no trailer: incomplete");
  const uint64_t chunks = LoadLe<uint64_t>(trailer.data() + 8);
  const uint32_t crcs = LoadLe<uint32_t>(trailer.data() + 16);
  uint64_t at = kHeaderBytes;
  const uint64_t end = b.size() - kTrailerBytes;
  uint32_t running = 0;
  while (at < end) {
    if (end - at < kChunkHeaderBytes) return bad(absl::StrCat("a chunk header cut at offset ", at));
    const uint64_t offset = LoadLe<uint64_t>(b.data() + at);
    const uint32_t length = LoadLe<uint32_t>(b.data() + at + 8);
    const uint32_t crc = LoadLe<uint32_t>(b.data() + at + 12);
    if (end - at - kChunkHeaderBytes < length) return bad(absl::StrCat("a chunk cut at offset ", at));
    if (offset > c.info.region_bytes || length > c.info.region_bytes - offset) {
      return bad(absl::StrCat("the chunk at offset ", at, " lies outside the region"));
    }
    const absl::string_view bytes = b.substr(at + kChunkHeaderBytes, length);
    if (Crc32c(bytes) != crc) return bad(absl::StrCat("the chunk at offset ", at, " fails its checksum"));
    running = CrcOfCrc(running, crc);
    c.chunks.push_back({offset, std::string(bytes)});
    at += kChunkHeaderBytes + length;
  }
  if (c.chunks.size() != chunks || running != crcs) return bad("the trailer does not match the chunks");
  return c;
}

}  // namespace farm::storage
