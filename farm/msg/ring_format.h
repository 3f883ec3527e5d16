// The layout of records in a message ring (paper section 3.1, Figure 1).
//
// A ring is a contiguous buffer on the receiver, kept zeroed where unused. The sender
// writes each record with one fabric WRITE at its tail; the receiver polls the word at
// its head. A record is:
//
//   word 0   size (u32, whole record in bytes) | kind (u8) | version (u8) | pad (u8) |
//            flags (u8)                         -- non-zero: a record starts here
//   word 1   handler (u16) | src_thread (u16) | dst_thread (u16) | status (u16)
//   word 2   rpc id (u64)
//   ...      payload, then `pad` zero bytes to an 8-byte boundary
//   last     trailer = (sequence number << 1) | 1  -- non-zero: the record is complete
//
// Invariants:
//   1. Records are 8-byte aligned and a multiple of 8 bytes; a record never wraps. When
//      the space before the ring's end is too small, the sender writes a pad record: a
//      single word 0 of kind kPad whose size covers the rest of the ring.
//   2. WRITEs land in increasing address order (fabric.h), so a non-zero trailer means
//      the whole record is there. The trailer also carries the record's sequence number
//      in its ring; a mismatch means corruption and the ring is abandoned.
//   3. The receiver zeroes a record after handling it and before the sender can learn
//      that its space is free.
//   4. A record is at most a quarter of the ring. The receiver returns space after
//      handling half the ring, so a sender always eventually finds room for one record
//      plus the pad before it.
#ifndef FARM_MSG_RING_FORMAT_H_
#define FARM_MSG_RING_FORMAT_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/statusor.h"

namespace farm::ring {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 24;
inline constexpr size_t kTrailerBytes = 8;
inline constexpr size_t kOverheadBytes = kHeaderBytes + kTrailerBytes;

enum class Kind : uint8_t { kPad = 1, kMessage = 2 };

// Flags of a message record.
inline constexpr uint8_t kFlagRequest = 1;   // expects a response with the same rpc id
inline constexpr uint8_t kFlagResponse = 2;  // answers a request
inline constexpr uint8_t kFlagError = 4;     // response: `status` is an error code and
                                             // the payload its message

inline constexpr uint16_t kAnyThread = 0xFFFF;

struct Header {
  uint32_t size = 0;
  Kind kind = Kind::kMessage;
  uint8_t pad = 0;
  uint8_t flags = 0;
  uint16_t handler = 0;
  uint16_t src_thread = 0;
  uint16_t dst_thread = kAnyThread;
  uint16_t status = 0;
  uint64_t rpc_id = 0;

  size_t payload_bytes() const { return size - kOverheadBytes - pad; }
};

// Bytes a record with `payload` bytes occupies.
inline constexpr size_t RecordBytes(size_t payload) {
  return (kOverheadBytes + payload + 7) & ~size_t{7};
}
inline constexpr uint64_t Trailer(uint64_t sequence) { return (sequence << 1) | 1; }
inline constexpr size_t MaxRecordBytes(size_t ring_bytes) { return ring_bytes / 4; }

// Word 0 of a pad record covering `bytes`.
uint64_t PadWord(uint32_t bytes);

// Writes the header words of `h` (which must have size, kind and pad set) to `out`.
void EncodeHeader(const Header& h, uint64_t out[3]);

// Decodes word 0 as found at ring offset `pos` of a ring of `ring_bytes`. DataLoss when
// it cannot be a record there (bad version or kind, size not 8-aligned, too small, or
// running past the ring's end).
absl::StatusOr<Header> DecodeWord0(uint64_t word0, size_t pos, size_t ring_bytes);
// Fills in the rest of a message header from words 1 and 2.
void DecodeRest(uint64_t word1, uint64_t word2, Header& h);

}  // namespace farm::ring

#endif  // FARM_MSG_RING_FORMAT_H_
