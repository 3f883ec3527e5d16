#include "farm/base/region.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm {
namespace {

constexpr uint64_t kHugetlbPage = uint64_t{2} << 20;

absl::StatusOr<char*> MapShared(int fd, uint64_t size) {
  void* p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
  if (p == MAP_FAILED) return absl::ErrnoToStatus(errno, "mmap region");
  return static_cast<char*>(p);
}

}  // namespace

absl::StatusOr<Region> Region::Create(RegionId id, uint64_t size, const RegionOptions& options) {
  const uint64_t page = options.huge_pages == HugePages::kHugetlb
                            ? kHugetlbPage
                            : static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (size == 0 || size > kMaxRegionSize || size % page != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "region %u: size %u must be a non-zero multiple of %u bytes and at most %u", id, size,
        page, kMaxRegionSize));
  }
  unsigned flags = MFD_CLOEXEC;
  if (options.huge_pages == HugePages::kHugetlb) flags |= MFD_HUGETLB;
  const std::string name = absl::StrCat("farm-region-", id);
  UniqueFd fd(::memfd_create(name.c_str(), flags));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(size)) != 0) {
    return absl::ErrnoToStatus(errno, "ftruncate region");
  }
  absl::StatusOr<char*> base = MapShared(fd.get(), size);
  if (!base.ok()) return base.status();
  if (options.huge_pages == HugePages::kTransparent) {
    // Advisory: where THP for shmem is off this does nothing, which is fine.
    (void)::madvise(*base, size, MADV_HUGEPAGE);
  }
  return Region(id, std::move(fd), *base, size);
}

absl::StatusOr<Region> Region::Attach(RegionId id, UniqueFd fd, uint64_t size) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::ErrnoToStatus(errno, "fstat region fd");
  if (size == 0 || size > kMaxRegionSize || static_cast<uint64_t>(st.st_size) < size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "region %u: cannot attach %u bytes from an fd of %d bytes", id, size, st.st_size));
  }
  absl::StatusOr<char*> base = MapShared(fd.get(), size);
  if (!base.ok()) return base.status();
  return Region(id, std::move(fd), *base, size);
}

Region::Region(Region&& other) noexcept
    : id_(other.id_),
      fd_(std::move(other.fd_)),
      base_(std::exchange(other.base_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

Region& Region::operator=(Region&& other) noexcept {
  if (this != &other) {
    Unmap();
    id_ = other.id_;
    fd_ = std::move(other.fd_);
    base_ = std::exchange(other.base_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

Region::~Region() { Unmap(); }

void Region::Unmap() {
  if (base_ != nullptr) ::munmap(base_, size_);
  base_ = nullptr;
  size_ = 0;
}

absl::Status Region::Discard(uint64_t offset, uint64_t length) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  if (!Contains(offset, length) || offset % page != 0 || length % page != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "region %u: discard [%u, +%u) is not page-aligned inside %u bytes", id_, offset, length,
        size_));
  }
  if (::fallocate(fd_.get(), FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
                  static_cast<off_t>(offset), static_cast<off_t>(length)) != 0) {
    return absl::ErrnoToStatus(errno, "fallocate(PUNCH_HOLE)");
  }
  return absl::OkStatus();
}

}  // namespace farm
