// MsgBuffers: the node-private memory that messaging runs in, one registered region:
//
//   [ incoming rings | outgoing staging mirrors | 64-byte words ]
//
// Incoming rings are written by peers (through the region's capability). A sender
// builds each record in its staging mirror at the same offset it will have in the
// remote ring and WRITEs it from there, so the local buffer of a WRITE stays valid
// until the receiver has consumed it. Words hold the senders' copies of receivers'
// heads (written remotely) and the receivers' head values being sent back.
//
// Invariants: an allocated ring slot is all zeros (never-used memory, or punched out
// with Region::Discard when freed); words are zeroed when freed.
//
// Thread-safe: slots are allocated by the fabric's accept thread and by connecting
// threads, and freed by worker threads.
#ifndef FARM_MSG_MSG_BUFFERS_H_
#define FARM_MSG_MSG_BUFFERS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "farm/base/mutex.h"
#include "farm/base/region.h"
#include "farm/fabric/fabric.h"

namespace farm {

class MsgBuffers {
 public:
  // ring_bytes: a multiple of 4096 in [16 KiB, 64 MiB]. max_rings: incoming rings (and
  // outgoing mirrors) this node can hold at once.
  static absl::StatusOr<std::unique_ptr<MsgBuffers>> Create(Fabric* fabric, RegionId id,
                                                            uint32_t ring_bytes,
                                                            uint32_t max_rings);
  ~MsgBuffers();

  enum class Kind { kRing, kStaging, kWord };
  static constexpr uint32_t kWordBytes = 64;

  // An offset into the region. ResourceExhausted when every slot of the kind is in use.
  absl::StatusOr<uint64_t> Allocate(Kind kind);
  void Free(Kind kind, uint64_t offset);

  char* at(uint64_t offset) const { return region_.base() + offset; }
  uint32_t ring_bytes() const { return ring_bytes_; }
  const RegionCapability& capability() const { return registered_.capability; }
  uint32_t lkey() const { return registered_.local.lkey; }

 private:
  struct Pool {
    uint64_t base = 0;
    uint64_t slot_bytes = 0;
    std::vector<uint64_t> free;  // offsets
  };
  MsgBuffers(Fabric* fabric, Region region, uint32_t ring_bytes, uint32_t max_rings);
  Pool& pool(Kind kind) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return pools_[static_cast<int>(kind)]; }

  Fabric* const fabric_;
  Region region_;
  RegisteredRegion registered_;
  const uint32_t ring_bytes_;
  Mutex mu_;
  Pool pools_[3] ABSL_GUARDED_BY(mu_);
};

}  // namespace farm

#endif  // FARM_MSG_MSG_BUFFERS_H_
