#include "farm/storage/data_directory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/crc32c.h"
#include "farm/base/wire.h"

namespace farm::storage {
namespace {

constexpr char kMagic[8] = {'F', 'a', 'R', 'M', 'd', 'a', 't', 'a'};
constexpr size_t kMaxClusterName = 256;

// magic | format u32 | node u32 | name length u32 | name | crc32c u32 of what precedes
std::string Encode(uint32_t format, const std::string& cluster, uint32_t node) {
  std::string out(kMagic, sizeof(kMagic));
  WireWriter(&out).Put<uint32_t>(format).Put<uint32_t>(node).Put<uint32_t>(static_cast<uint32_t>(cluster.size()))
      .Bytes(cluster);
  WireWriter(&out).Put<uint32_t>(Crc32c(out));
  return out;
}

uint64_t Identity(const std::string& cluster, uint32_t node) {
  const uint32_t node_crc = Crc32c(absl::string_view(reinterpret_cast<const char*>(&node), sizeof(node)));
  return (uint64_t{Crc32c(cluster)} << 32) | node_crc;
}

}  // namespace

absl::StatusOr<DataDirectory> DataDirectory::Open(FileSystem* fs, const std::string& path,
                                                  const std::string& cluster, uint32_t node_id) {
  if (cluster.empty() || cluster.size() > kMaxClusterName) {
    return absl::InvalidArgumentError(absl::StrCat("cluster name of ", cluster.size(), " bytes"));
  }
  if (absl::Status s = fs->CreateDir(path); !s.ok()) return s;
  const std::string file = path + "/FARMDATA";
  absl::StatusOr<std::string> bytes = fs->ReadFile(file);
  if (absl::IsNotFound(bytes.status())) {
    const std::string tmp = file + ".tmp";
    if (absl::StatusOr<std::vector<std::string>> names = fs->List(path); names.ok()) {
      for (const std::string& n : *names) {
        if (n == "FARMDATA.tmp") (void)fs->Remove(tmp);  // a start that died half way
      }
    }
    absl::StatusOr<std::unique_ptr<WritableFile>> out = fs->OpenForAppend(tmp);
    if (!out.ok()) return out.status();
    if (absl::Status s = (*out)->Append(Encode(kDataFormat, cluster, node_id)); !s.ok()) return s;
    if (absl::Status s = (*out)->Sync(); !s.ok()) return s;
    out->reset();
    if (absl::Status s = fs->Rename(tmp, file); !s.ok()) return s;
    if (absl::Status s = fs->SyncDir(path); !s.ok()) return s;
    // And the directory's own name, which CreateDir may just have made.
    const size_t slash = path.find_last_of('/');
    if (absl::Status s = fs->SyncDir(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
        !s.ok()) {
      return s;
    }
    return DataDirectory(path, Identity(cluster, node_id), true);
  }
  if (!bytes.ok()) return bytes.status();
  const std::string& b = *bytes;
  auto damaged = [&](absl::string_view why) {
    return absl::DataLossError(absl::StrCat(file, " is damaged (", why, "): not starting on it"));
  };
  if (b.size() < sizeof(kMagic) + 16 || b.compare(0, sizeof(kMagic), kMagic, sizeof(kMagic)) != 0) {
    return damaged("not a FaRM data directory's identity file");
  }
  const uint32_t format = LoadLe<uint32_t>(b.data() + 8);
  const uint32_t node = LoadLe<uint32_t>(b.data() + 12);
  const uint32_t length = LoadLe<uint32_t>(b.data() + 16);
  if (length > kMaxClusterName || b.size() != sizeof(kMagic) + 12 + length + 4) return damaged("size");
  if (LoadLe<uint32_t>(b.data() + b.size() - 4) != Crc32c(absl::string_view(b).substr(0, b.size() - 4))) {
    return damaged("checksum");
  }
  const std::string owner = b.substr(20, length);
  if (format != kDataFormat) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s holds data of format %d; this build reads format %d", path, format, kDataFormat));
  }
  if (owner != cluster || node != node_id) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s belongs to node %d of cluster '%s', not to node %d of cluster '%s': give each node its own "
        "data directory (or remove this one to start afresh)",
        path, node, owner, node_id, cluster));
  }
  return DataDirectory(path, Identity(cluster, node_id), false);
}

}  // namespace farm::storage
