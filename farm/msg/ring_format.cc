#include "farm/msg/ring_format.h"

#include "absl/strings/str_format.h"

namespace farm::ring {

uint64_t PadWord(uint32_t bytes) {
  return bytes | (uint64_t{static_cast<uint8_t>(Kind::kPad)} << 32) | (uint64_t{kVersion} << 40);
}

void EncodeHeader(const Header& h, uint64_t out[3]) {
  out[0] = h.size | (uint64_t{static_cast<uint8_t>(h.kind)} << 32) | (uint64_t{kVersion} << 40) |
           (uint64_t{h.pad} << 48) | (uint64_t{h.flags} << 56);
  out[1] = h.handler | (uint64_t{h.src_thread} << 16) | (uint64_t{h.dst_thread} << 32) |
           (uint64_t{h.status} << 48);
  out[2] = h.rpc_id;
}

absl::StatusOr<Header> DecodeWord0(uint64_t word0, size_t pos, size_t ring_bytes) {
  Header h;
  h.size = static_cast<uint32_t>(word0);
  const auto kind = static_cast<uint8_t>(word0 >> 32);
  const auto version = static_cast<uint8_t>(word0 >> 40);
  h.pad = static_cast<uint8_t>(word0 >> 48);
  h.flags = static_cast<uint8_t>(word0 >> 56);
  if (version != kVersion) {
    return absl::DataLossError(absl::StrFormat("ring record at %u: version %u, want %u", pos,
                                               version, kVersion));
  }
  if (h.size == 0 || h.size % 8 != 0 || h.size > ring_bytes - pos) {
    return absl::DataLossError(
        absl::StrFormat("ring record at %u: size %u does not fit a ring of %u", pos, h.size,
                        ring_bytes));
  }
  if (kind == static_cast<uint8_t>(Kind::kPad)) {
    h.kind = Kind::kPad;
    if (pos + h.size != ring_bytes) {
      return absl::DataLossError(absl::StrFormat("pad record at %u does not reach the ring's end", pos));
    }
    return h;
  }
  if (kind != static_cast<uint8_t>(Kind::kMessage)) {
    return absl::DataLossError(absl::StrFormat("ring record at %u: unknown kind %u", pos, kind));
  }
  h.kind = Kind::kMessage;
  if (h.size < kOverheadBytes || h.pad > 7 || h.size - kOverheadBytes < h.pad ||
      h.size > MaxRecordBytes(ring_bytes)) {
    return absl::DataLossError(
        absl::StrFormat("ring record at %u: size %u / pad %u is malformed", pos, h.size, h.pad));
  }
  return h;
}

void DecodeRest(uint64_t word1, uint64_t word2, Header& h) {
  h.handler = static_cast<uint16_t>(word1);
  h.src_thread = static_cast<uint16_t>(word1 >> 16);
  h.dst_thread = static_cast<uint16_t>(word1 >> 32);
  h.status = static_cast<uint16_t>(word1 >> 48);
  h.rpc_id = word2;
}

}  // namespace farm::ring
