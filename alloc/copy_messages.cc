#include "alloc/copy_messages.h"

#include "alloc/messages.h"
#include "farm/base/wire.h"

namespace farm::alloc {

std::string EncodeCopyBegin(const CopyBegin& m) {
  return WireWriter().Put(kAllocWireFormat).Put(m.region).Put(m.bytes).Take();
}

std::optional<CopyBegin> DecodeCopyBegin(absl::string_view payload) {
  WireReader in(payload);
  uint8_t tag = 0;
  CopyBegin m;
  if (!in.Get(&tag) || tag != kAllocWireFormat || !in.Get(&m.region) || !in.Get(&m.bytes) ||
      !in.done()) {
    return std::nullopt;
  }
  return m;
}

std::string EncodeCopyEnd(const CopyEnd& m) {
  return WireWriter().Put(kAllocWireFormat).Put(m.region).Put(m.bytes_sent).Put(m.crc).Take();
}

std::optional<CopyEnd> DecodeCopyEnd(absl::string_view payload) {
  WireReader in(payload);
  uint8_t tag = 0;
  CopyEnd m;
  if (!in.Get(&tag) || tag != kAllocWireFormat || !in.Get(&m.region) || !in.Get(&m.bytes_sent) ||
      !in.Get(&m.crc) || !in.done()) {
    return std::nullopt;
  }
  return m;
}

}  // namespace farm::alloc
