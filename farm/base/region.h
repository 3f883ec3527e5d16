// Region: a contiguous span of memory that the fabric can register and peers can access.
//
// Regions are the unit of mapping, registration and (later) recovery. Each is backed by a
// memfd mapped MAP_SHARED, so that
//   - memory is reserved, not committed: a 2 GB region costs RSS only for pages touched;
//   - another process on the same host can map the same memory (the shm fabric passes
//     the fd over a Unix socket), which is how shm performs one-sided ops;
//   - huge pages are used where the OS allows (MADV_HUGEPAGE, effective when
//     /sys/kernel/mm/transparent_hugepage/shmem_enabled permits it), or hugetlbfs pages
//     when explicitly requested.
//
// Sizes: a region is at most 4 GiB (offsets are 32 bits) and a multiple of the page size
// (2 MiB with hugetlb). The default in configurations is 2 GiB; tests use a few MiB.
//
// Thread safety: a Region is an owning handle; the memory it maps may be accessed by any
// thread, subject to the protocols of the layers above. Moving a Region does not move
// the memory. The mapping lives until the Region is destroyed.
#ifndef FARM_BASE_REGION_H_
#define FARM_BASE_REGION_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "farm/base/unique_fd.h"

namespace farm {

inline constexpr uint64_t kMaxRegionSize = uint64_t{1} << 32;
inline constexpr uint64_t kDefaultRegionSize = uint64_t{2} << 30;

enum class HugePages {
  kNone,         // 4 KiB pages.
  kTransparent,  // advise THP; silently 4 KiB pages where the OS does not allow it.
  kHugetlb,      // hugetlbfs pages (MFD_HUGETLB); fails unless pages are reserved.
};

struct RegionOptions {
  HugePages huge_pages = HugePages::kTransparent;
};

class Region {
 public:
  // Creates a zero-filled region of `size` bytes. Fails with InvalidArgument for a size
  // of 0, over kMaxRegionSize or not a page multiple, and with the system's error when
  // memory cannot be reserved.
  static absl::StatusOr<Region> Create(RegionId id, uint64_t size,
                                       const RegionOptions& options = {});

  // Maps a region created by another process, given its memfd (ownership passes to the
  // returned Region). Fails when the fd is smaller than `size`.
  static absl::StatusOr<Region> Attach(RegionId id, UniqueFd fd, uint64_t size);

  Region(Region&& other) noexcept;
  Region& operator=(Region&& other) noexcept;
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region();

  RegionId id() const { return id_; }
  char* base() const { return base_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_.get(); }

  // True when [offset, offset + length) lies inside the region (overflow-safe).
  bool Contains(uint64_t offset, uint64_t length) const {
    return offset <= size_ && length <= size_ - offset;
  }

  // Returns the pages of [offset, offset + length) to the OS; they read as zero after.
  // Both must be page multiples. Never on memory a device has pinned
  // (Fabric::PinsRegisteredMemory): the device would keep writing the old pages.
  absl::Status Discard(uint64_t offset, uint64_t length);

 private:
  Region(RegionId id, UniqueFd fd, char* base, uint64_t size)
      : id_(id), fd_(std::move(fd)), base_(base), size_(size) {}
  void Unmap();

  RegionId id_ = kNullRegion;
  UniqueFd fd_;
  char* base_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace farm

#endif  // FARM_BASE_REGION_H_
