// Wire format of the shm backend's control socket (after the handshake).
//
// The control socket carries no data-path traffic: one-sided ops run on shared
// mappings. It is used to fetch the descriptors an initiator needs (the owner's
// registration table, its doorbell table, a region's memfd, a doorbell's eventfd), and
// its hang-up tells the initiator that the owner is gone.
//
// Each request is one fixed 24-byte frame; each response a fixed 32-byte frame with
// `fd_count` descriptors attached (SCM_RIGHTS). Little-endian.
#ifndef FARM_FABRIC_SHM_SHM_WIRE_H_
#define FARM_FABRIC_SHM_SHM_WIRE_H_

#include <cstdint>

namespace farm::shm_wire {

enum class Request : uint32_t {
  kGetTables = 1,    // -> fds {region table, doorbell table}; value = instance id,
                     //    value2 = region table capacity, value3 = doorbell capacity
  kMapRegion = 2,    // arg32 = region id, arg64 = rkey -> fd {region memfd}; value = size
  kGetDoorbell = 3,  // arg32 = doorbell id -> fd {eventfd}
};

struct RequestFrame {
  uint32_t type;
  uint32_t arg32;
  uint64_t arg64;
  uint64_t reserved;
};
static_assert(sizeof(RequestFrame) == 24);

struct ResponseFrame {
  uint32_t type;      // echoes the request
  uint32_t status;    // absl::StatusCode; 0 = OK
  uint64_t value;
  uint32_t value2;
  uint32_t value3;
  uint32_t fd_count;  // descriptors attached to this frame
  uint32_t reserved;
};
static_assert(sizeof(ResponseFrame) == 32);

}  // namespace farm::shm_wire

#endif  // FARM_FABRIC_SHM_SHM_WIRE_H_
