#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "farm/base/unique_fd.h"
#include "farm/storage/file_system.h"

namespace farm::storage {
namespace {

// ENOSPC and EDQUOT are a full disk: ResourceExhausted, as the callers promise.
absl::Status IoError(int error, absl::string_view what, absl::string_view path) {
  const std::string message = absl::StrCat(what, " ", path);
  if (error == ENOSPC || error == EDQUOT) {
    return absl::ResourceExhaustedError(absl::StrCat(message, ": no space left on the device"));
  }
  return absl::ErrnoToStatus(error, message);
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(UniqueFd fd, std::string path, uint64_t size)
      : fd_(std::move(fd)), path_(std::move(path)), size_(size) {}

  absl::Status Append(absl::string_view data) override {
    while (!data.empty()) {
      const ssize_t n = ::write(fd_.get(), data.data(), data.size());
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError(errno, "write", path_);
      }
      size_ += static_cast<uint64_t>(n);
      data.remove_prefix(static_cast<size_t>(n));
    }
    return absl::OkStatus();
  }

  absl::Status Sync() override {
    if (::fdatasync(fd_.get()) != 0) return IoError(errno, "fdatasync", path_);
    return absl::OkStatus();
  }

  uint64_t size() const override { return size_; }

 private:
  UniqueFd fd_;
  const std::string path_;
  uint64_t size_;
};

class PosixFileSystem final : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForAppend(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd.valid()) return IoError(errno, "open", path);
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return IoError(errno, "fstat", path);
    return std::unique_ptr<WritableFile>(
        new PosixWritableFile(std::move(fd), path, static_cast<uint64_t>(st.st_size)));
  }

  absl::StatusOr<std::string> ReadFile(const std::string& path) override {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return IoError(errno, "open", path);
    std::string out;
    char buf[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
      if (n < 0) {
        if (errno == EINTR) continue;
        return IoError(errno, "read", path);
      }
      if (n == 0) return out;
      out.append(buf, static_cast<size_t>(n));
    }
  }

  absl::Status Truncate(const std::string& path, uint64_t size) override {
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd.valid()) return IoError(errno, "open", path);
    if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) return IoError(errno, "truncate", path);
    if (::fdatasync(fd.get()) != 0) return IoError(errno, "fdatasync", path);
    return absl::OkStatus();
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) return IoError(errno, absl::StrCat("rename to ", to), from);
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return IoError(errno, "remove", path);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> List(const std::string& dir) override {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return IoError(errno, "list", dir);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d)) {
      const std::string name = e->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status CreateDir(const std::string& dir) override {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return IoError(ec.value(), "create directory", dir);
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd.valid()) return IoError(errno, "open directory", dir);
    if (::fsync(fd.get()) != 0) return IoError(errno, "fsync directory", dir);
    return absl::OkStatus();
  }
};

}  // namespace

std::unique_ptr<FileSystem> NewPosixFileSystem() { return std::make_unique<PosixFileSystem>(); }

}  // namespace farm::storage
