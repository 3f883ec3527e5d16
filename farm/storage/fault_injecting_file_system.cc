#include "farm/storage/fault_injecting_file_system.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm::storage {
namespace {

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

}  // namespace

class FaultInjectingFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectingFileSystem* fs, std::string path, std::shared_ptr<Contents> contents)
      : fs_(fs), path_(std::move(path)), contents_(std::move(contents)) {}
  absl::Status Append(absl::string_view data) override { return fs_->Append(path_, data); }
  absl::Status Sync() override { return fs_->Sync(path_); }
  uint64_t size() const override {
    MutexLock lock(&fs_->mu_);
    return contents_->data.size();
  }

 private:
  FaultInjectingFileSystem* const fs_;
  const std::string path_;
  const std::shared_ptr<Contents> contents_;
};

absl::Status FaultInjectingFileSystem::CheckAliveLocked() const {
  if (crashed_) return absl::UnavailableError("the machine crashed (fault injection)");
  return absl::OkStatus();
}

uint64_t FaultInjectingFileSystem::UsedLocked() const {
  uint64_t used = 0;
  for (const auto& [path, contents] : files_) used += contents->data.size();
  return used;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectingFileSystem::OpenForAppend(const std::string& path) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  if (!dirs_.contains(Parent(path))) return absl::NotFoundError(absl::StrCat("open ", path, ": no such directory"));
  std::shared_ptr<Contents>& contents = files_[path];
  if (contents == nullptr) contents = std::make_shared<Contents>();
  return std::unique_ptr<WritableFile>(new File(this, path, contents));
}

absl::Status FaultInjectingFileSystem::Append(const std::string& path, absl::string_view data) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  if (!next_append_error_.ok()) return std::exchange(next_append_error_, absl::OkStatus());
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("write ", path, ": removed"));
  if (UsedLocked() + data.size() > capacity_) {
    return absl::ResourceExhaustedError(absl::StrCat("write ", path, ": no space left on the device"));
  }
  it->second->data.append(data.data(), data.size());
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Sync(const std::string& path) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  if (crash_at_sync_.has_value() && --*crash_at_sync_ == 0) {
    crashed_ = true;
    crash_at_sync_.reset();
    return absl::UnavailableError("the machine crashed at this sync (fault injection)");
  }
  if (!next_sync_error_.ok()) return std::exchange(next_sync_error_, absl::OkStatus());
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("sync ", path, ": removed"));
  it->second->synced = it->second->data.size();
  ++syncs_;
  return absl::OkStatus();
}

absl::StatusOr<std::string> FaultInjectingFileSystem::ReadFile(const std::string& path) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("open ", path, ": no such file"));
  return it->second->data;
}

absl::Status FaultInjectingFileSystem::Truncate(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  auto it = files_.find(path);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("truncate ", path, ": no such file"));
  it->second->data.resize(size);
  it->second->synced = size;  // Truncate is durable (file_system.h)
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Rename(const std::string& from, const std::string& to) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  auto it = files_.find(from);
  if (it == files_.end()) return absl::NotFoundError(absl::StrCat("rename ", from, ": no such file"));
  files_[to] = it->second;
  files_.erase(from);
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::Remove(const std::string& path) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  if (files_.erase(path) == 0) return absl::NotFoundError(absl::StrCat("remove ", path, ": no such file"));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> FaultInjectingFileSystem::List(const std::string& dir) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  if (!dirs_.contains(dir)) return absl::NotFoundError(absl::StrCat("list ", dir, ": no such directory"));
  std::vector<std::string> names;
  const std::string prefix = dir + "/";
  for (const auto& [path, contents] : files_) {
    if (absl::StartsWith(path, prefix) && path.find('/', prefix.size()) == std::string::npos) {
      names.push_back(path.substr(prefix.size()));
    }
  }
  return names;  // the map's order: sorted
}

absl::Status FaultInjectingFileSystem::CreateDir(const std::string& dir) {
  MutexLock lock(&mu_);
  if (absl::Status s = CheckAliveLocked(); !s.ok()) return s;
  for (std::string d = dir; !d.empty(); d = Parent(d)) dirs_.insert(d);
  dirs_.insert("");
  return absl::OkStatus();
}

absl::Status FaultInjectingFileSystem::SyncDir(const std::string& dir) {
  MutexLock lock(&mu_);
  return CheckAliveLocked();
}

void FaultInjectingFileSystem::CrashAtSync(int k) {
  MutexLock lock(&mu_);
  crash_at_sync_ = k;
}

void FaultInjectingFileSystem::Restart() {
  MutexLock lock(&mu_);
  for (auto& [path, contents] : files_) contents->data.resize(contents->synced);
  crashed_ = false;
  crash_at_sync_.reset();
  next_append_error_ = absl::OkStatus();
  next_sync_error_ = absl::OkStatus();
}

void FaultInjectingFileSystem::FailNextAppend(absl::Status error) {
  MutexLock lock(&mu_);
  next_append_error_ = std::move(error);
}

void FaultInjectingFileSystem::FailNextSync(absl::Status error) {
  MutexLock lock(&mu_);
  next_sync_error_ = std::move(error);
}

void FaultInjectingFileSystem::set_capacity(uint64_t bytes) {
  MutexLock lock(&mu_);
  capacity_ = bytes;
}

absl::Status FaultInjectingFileSystem::Corrupt(const std::string& path, uint64_t offset, absl::string_view bytes) {
  MutexLock lock(&mu_);
  auto it = files_.find(path);
  if (it == files_.end() || offset + bytes.size() > it->second->data.size()) {
    return absl::OutOfRangeError(absl::StrCat("corrupt ", path, ": outside the file"));
  }
  it->second->data.replace(offset, bytes.size(), bytes.data(), bytes.size());
  return absl::OkStatus();
}

int FaultInjectingFileSystem::syncs() const {
  MutexLock lock(&mu_);
  return syncs_;
}

uint64_t FaultInjectingFileSystem::used() const {
  MutexLock lock(&mu_);
  return UsedLocked();
}

bool FaultInjectingFileSystem::crashed() const {
  MutexLock lock(&mu_);
  return crashed_;
}

}  // namespace farm::storage
