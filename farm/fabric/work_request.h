// The data types of one-sided operations: capabilities, work requests, completions.
//
// These mirror ibverbs (ibv_send_wr, ibv_wc) closely enough that the verbs backend maps
// them one to one, and are plain values safe to copy between threads.
#ifndef FARM_FABRIC_WORK_REQUEST_H_
#define FARM_FABRIC_WORK_REQUEST_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"

namespace farm {

// What a region's owner hands to peers so they can reach the region with one-sided ops
// (the paper's "capability"; an rkey plus where the region is). Obtained from
// Fabric::RegisterRegion on the owner and sent to peers by the layers above; it stays
// valid until the owner deregisters the region. Possession is the permission: a peer
// that presents a wrong rkey, or one of a deregistered region, gets an error completion.
struct RegionCapability {
  RegionId region = kNullRegion;
  uint32_t reserved = 0;
  uint64_t length = 0;       // bytes the capability covers, from the region's start
  uint64_t rkey = 0;         // chosen by the owner's fabric; 0 is never valid
  uint64_t remote_base = 0;  // backend-specific: verbs puts the region's virtual address here

  friend bool operator==(const RegionCapability&, const RegionCapability&) = default;
  std::string ToString() const;
};

// A capability as text ("region:length:rkey:remote_base" in hex), for passing on a
// command line or in a log; DecodeCapability is InvalidArgument for anything else.
std::string EncodeCapability(const RegionCapability& cap);
absl::StatusOr<RegionCapability> DecodeCapability(absl::string_view text);

// A region as registered locally: the lkey names it in work requests' local buffers.
struct LocalRegion {
  RegionId region = kNullRegion;
  uint32_t lkey = 0;
  char* base = nullptr;
  uint64_t length = 0;
};

struct RegisteredRegion {
  LocalRegion local;
  RegionCapability capability;
};

enum class Opcode : uint8_t {
  kRead = 1,         // remote -> local buffer
  kWrite = 2,        // local buffer -> remote, visible in increasing address order
  kCompareSwap = 3,  // 8-byte CAS on an 8-byte-aligned remote word; old value -> local
  kFetchAdd = 4,     // 8-byte fetch-and-add; old value -> local
  kDisconnect = 5,   // completion only: the endpoint failed (see CompletionQueue)
};

inline constexpr uint32_t kNoDoorbell = 0xFFFFFFFFu;

struct WorkRequest {
  uint64_t wr_id = 0;  // returned in the completion
  Opcode opcode = Opcode::kRead;
  // When false, a successful op produces no completion (selective signalling); a failed
  // op always does.
  bool signaled = true;
  // kWrite only: after the written bytes are visible at the target, ring the target's
  // doorbell with this id, waking the thread parked on it (write-with-immediate). A
  // WRITE with notify may have length 0: a pure wake-up, ordered after the endpoint's
  // earlier WRITEs (verbs: a zero-length RDMA WRITE with immediate).
  uint32_t notify = kNoDoorbell;
  // Local buffer: must lie in a region registered with this fabric, named by lkey, and
  // stay untouched until the op completes. Atomics use 8 bytes for the old value.
  void* local = nullptr;
  uint32_t length = 0;
  uint32_t lkey = 0;
  // Remote target: a capability from the peer and an offset within it. The capability
  // is read during Post only.
  const RegionCapability* remote = nullptr;
  uint64_t remote_offset = 0;
  uint64_t compare_add = 0;  // kCompareSwap: expected value; kFetchAdd: addend
  uint64_t swap = 0;         // kCompareSwap: new value
};

enum class CompletionStatus : uint8_t {
  kSuccess = 0,
  // The local buffer is not inside the region its lkey names.
  kLocalProtectionError = 1,
  // The target refused: range outside the region, wrong or revoked rkey, unknown region.
  // Target memory is untouched.
  kRemoteAccessError = 2,
  // The target could not parse or execute the request (e.g. a misaligned atomic).
  kRemoteInvalidRequest = 3,
  // The connection to the peer broke while the op was outstanding; the op may or may
  // not have executed at the target.
  kTransportError = 4,
  // The endpoint had already failed; the op was not executed.
  kFlushed = 5,
};

struct Completion {
  uint64_t wr_id = 0;
  Opcode opcode = Opcode::kRead;
  CompletionStatus status = CompletionStatus::kSuccess;
  // kRead on CPU-executed backends: the first 8 bytes of the range changed while it was
  // copied, so the data may mix two states. Always false on verbs: a NIC reads each
  // cache line atomically, and the object layer's per-line versions catch the rest
  // (Soft-RoCE, a CPU copy, does not even keep lines whole). Callers decide; the object
  // layer retries.
  bool torn = false;
  uint32_t byte_len = 0;
};

const char* OpcodeName(Opcode op);
const char* CompletionStatusName(CompletionStatus status);

}  // namespace farm

#endif  // FARM_FABRIC_WORK_REQUEST_H_
