// Addresses in the cluster's shared address space.
//
// An Addr is 64 bits: a 32-bit region id and a 32-bit byte offset in that region. A
// FatPtr (128 bits) adds the object's size and the incarnation the holder expects, so a
// reader can tell that the object it points to was freed and reused (paper section 4.4).
// A RawPtr names a one-sided object the same way, as a type of its own.
//
// Region ids:
//   0                      never allocated, so Addr{} (raw 0) is the null address.
//   1 .. kMaxSharedRegion   regions of the shared address space, placed on machines by
//                           consistent hashing (membership/).
//   kFirstPrivateRegion..   node-private regions (ring buffers, staging buffers); they
//                           are registered with the fabric but are not part of the
//                           shared address space and are never placed by hashing.
//
// All types here are trivially copyable values, safe to share between threads.
#ifndef FARM_BASE_ADDRESS_H_
#define FARM_BASE_ADDRESS_H_

#include <compare>
#include <cstdint>
#include <string>

namespace farm {

using RegionId = uint32_t;
using NodeId = uint32_t;

inline constexpr RegionId kNullRegion = 0;
inline constexpr RegionId kFirstPrivateRegion = 0xF0000000u;
inline constexpr RegionId kMaxSharedRegion = kFirstPrivateRegion - 1;
inline constexpr NodeId kInvalidNode = 0xFFFFFFFFu;

inline constexpr bool IsPrivateRegion(RegionId id) { return id >= kFirstPrivateRegion; }

class Addr {
 public:
  constexpr Addr() = default;
  constexpr Addr(RegionId region, uint32_t offset)
      : raw_((static_cast<uint64_t>(region) << 32) | offset) {}
  static constexpr Addr FromRaw(uint64_t raw) {
    Addr a;
    a.raw_ = raw;
    return a;
  }

  constexpr RegionId region() const { return static_cast<RegionId>(raw_ >> 32); }
  constexpr uint32_t offset() const { return static_cast<uint32_t>(raw_); }
  constexpr uint64_t raw() const { return raw_; }
  constexpr bool is_null() const { return raw_ == 0; }

  friend constexpr auto operator<=>(Addr, Addr) = default;
  template <typename H>
  friend H AbslHashValue(H h, Addr a) {
    return H::combine(std::move(h), a.raw_);
  }

  // "r<region>+0x<offset>", e.g. "r7+0x1c0".
  std::string ToString() const;

 private:
  uint64_t raw_ = 0;
};
static_assert(sizeof(Addr) == 8);

// A pointer to an object: its address, its size in bytes as the application sees it,
// and the low 32 bits of the incarnation the holder expects (object headers keep 64).
struct FatPtr {
  Addr addr;
  uint32_t size = 0;
  uint32_t incarnation = 0;

  constexpr bool is_null() const { return addr.is_null(); }
  friend constexpr bool operator==(const FatPtr&, const FatPtr&) = default;
  std::string ToString() const;
};
static_assert(sizeof(FatPtr) == 16);

// A pointer to a one-sided object (farm/api/one_sided.h): raw memory that the
// application reaches with one-sided READ, WRITE, CAS and FETCH_ADD and keeps
// consistent itself. The same three fields as a FatPtr, but a distinct type with no
// conversion either way, so that a one-sided object is never handed to a transaction
// (or a transactional object to a one-sided op) by mistake; the object's header
// catches the rest at run time (object_layout.h, "One-sided objects").
struct RawPtr {
  Addr addr;
  uint32_t size = 0;         // payload bytes
  uint32_t incarnation = 0;  // low 32 bits, as in FatPtr

  constexpr bool is_null() const { return addr.is_null(); }
  friend constexpr bool operator==(const RawPtr&, const RawPtr&) = default;
  // "raw:r<region>+0x<offset>[size]#incarnation".
  std::string ToString() const;
};
static_assert(sizeof(RawPtr) == 16);

}  // namespace farm

#endif  // FARM_BASE_ADDRESS_H_
