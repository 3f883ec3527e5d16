// Wire format of the tcp backend after the handshake: a stream of op requests from the
// initiator and, in the same order, one response per request from the responder.
//
//   OpRequest  (48 B) [+ `length` data bytes for WRITE]
//   OpResponse (24 B) [+ `length` data bytes for a successful READ]
//
// Every frame starts with a kind byte; a responder that reads an unknown kind or
// opcode, or a WRITE longer than it accepts, closes the connection (the stream cannot
// be resynchronised). Responses are matched to requests by order. Little-endian.
#ifndef FARM_FABRIC_TCP_TCP_WIRE_H_
#define FARM_FABRIC_TCP_TCP_WIRE_H_

#include <cstdint>

namespace farm::tcp_wire {

inline constexpr uint8_t kOpRequest = 0xA1;
inline constexpr uint8_t kOpResponse = 0xA2;

struct OpRequest {
  uint8_t kind;    // kOpRequest
  uint8_t opcode;  // farm::Opcode
  uint16_t reserved;
  uint32_t length;
  uint32_t region;
  uint32_t notify;  // doorbell to ring after a WRITE, or kNoDoorbell
  uint64_t offset;
  uint64_t rkey;
  uint64_t compare_add;
  uint64_t swap;
};
static_assert(sizeof(OpRequest) == 48);

struct OpResponse {
  uint8_t kind;    // kOpResponse
  uint8_t opcode;  // echoes the request
  uint8_t status;  // farm::CompletionStatus
  uint8_t torn;
  uint32_t length;  // data bytes that follow
  uint64_t atomic_result;
  uint64_t reserved;
};
static_assert(sizeof(OpResponse) == 24);

}  // namespace farm::tcp_wire

#endif  // FARM_FABRIC_TCP_TCP_WIRE_H_
