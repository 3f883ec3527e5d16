// What the fabric benchmark's client and server agree on.
//
// The workload is the paper's Figure 2/3 micro-benchmark: a client reads a block of
// `size` bytes at a random offset of the server's memory, either with a one-sided READ,
// with an RPC over the ring buffers, or with a request/response over a plain TCP socket
// (the baseline). All three read the same memory of the same server process.
#ifndef FARM_TOOLS_FABRIC_BENCH_BENCH_PROTOCOL_H_
#define FARM_TOOLS_FABRIC_BENCH_BENCH_PROTOCOL_H_

#include <cstdint>

#include "farm/base/address.h"
#include "farm/msg/message.h"

namespace farm::bench {

inline constexpr MsgId kReadBlock = kBenchmarkMsgIds[1];
inline constexpr NodeId kServerNode = 1;
inline constexpr NodeId kClientNode = 2;
inline constexpr RegionId kServerRegion = 1;

// Request of the RPC and of the TCP baseline: read `size` bytes at `offset`.
struct ReadRequest {
  uint64_t offset;
  uint32_t size;
  uint32_t reserved;
};
static_assert(sizeof(ReadRequest) == 16);

// Random 64-byte-aligned offsets at which a block of `size` fits in `bytes`
// (xorshift: cheap enough not to show in the figures).
class RandomOffsets {
 public:
  RandomOffsets(uint64_t bytes, uint32_t size, uint64_t seed = 88172645463325252ull)
      : slots_((bytes - size) / 64 + 1), state_(seed) {}
  uint64_t Next() {
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return (state_ % slots_) * 64;
  }

 private:
  uint64_t slots_;
  uint64_t state_;
};

}  // namespace farm::bench

#endif  // FARM_TOOLS_FABRIC_BENCH_BENCH_PROTOCOL_H_
