#include "alloc/durable_records.h"

#include "absl/strings/str_format.h"
#include "alloc/messages.h"
#include "alloc/region_format.h"
#include "farm/base/wire.h"

namespace farm::alloc {

std::string EncodeRegionCreated(const RegionCreated& r) {
  WireWriter w;
  w.Put(kAllocWireFormat).Put(r.region).Put(r.bytes).Put(r.primary);
  if (r.copy != 0) w.Put(r.copy);
  return w.Take();
}

absl::StatusOr<RegionCreated> DecodeRegionCreated(absl::string_view payload) {
  WireReader in(payload);
  uint8_t format = 0;
  RegionCreated r;
  if (!in.Get(&format) || format != kAllocWireFormat || !in.Get(&r.region) || !in.Get(&r.bytes) ||
      !in.Get(&r.primary) || (!in.done() && (!in.Get(&r.copy) || r.copy == 0)) || !in.done()) {
    return absl::DataLossError(absl::StrFormat("malformed region record (%d bytes)", payload.size()));
  }
  return r;
}

std::string EncodeBlockWords(RegionId region, uint32_t first_unit, const uint64_t* words, size_t count) {
  WireWriter w;
  w.Put(kAllocWireFormat).Put(region).Put(first_unit).Put(static_cast<uint32_t>(count));
  for (size_t i = 0; i < count; ++i) w.Put(words[i]);
  return w.Take();
}

absl::StatusOr<BlockWords> DecodeBlockWords(absl::string_view payload) {
  WireReader in(payload);
  uint8_t format = 0;
  uint32_t count = 0;
  BlockWords b;
  if (!in.Get(&format) || format != kAllocWireFormat || !in.Get(&b.region) || !in.Get(&b.first_unit) ||
      !in.Get(&count) || count > kMaxBlockUnits || in.left() != uint64_t{count} * sizeof(uint64_t)) {
    return absl::DataLossError(absl::StrFormat("malformed block-table record (%d bytes)", payload.size()));
  }
  b.words.resize(count);
  for (uint64_t& w : b.words) in.Get(&w);
  return b;
}

std::string EncodeRegionImage(RegionId region, uint64_t offset, absl::string_view bytes) {
  std::string out;
  out.reserve(kRegionImageHeaderBytes + bytes.size());
  WireWriter(&out).Put(kAllocWireFormat).Put(region).Put(offset).Bytes(bytes);
  return out;
}

absl::StatusOr<RegionImage> DecodeRegionImage(absl::string_view payload) {
  WireReader in(payload);
  uint8_t format = 0;
  RegionImage image;
  if (!in.Get(&format) || format != kAllocWireFormat || !in.Get(&image.region) || !in.Get(&image.offset)) {
    return absl::DataLossError(absl::StrFormat("malformed region image record (%d bytes)", payload.size()));
  }
  image.bytes = payload.substr(kRegionImageHeaderBytes);
  return image;
}

std::string EncodeCopiesDue(RegionId region, const std::vector<NodeId>& nodes) {
  WireWriter w;
  w.Put(kAllocWireFormat).Put(region).Put(static_cast<uint32_t>(nodes.size()));
  for (NodeId n : nodes) w.Put(n);
  return w.Take();
}

absl::StatusOr<CopiesDue> DecodeCopiesDue(absl::string_view payload) {
  WireReader in(payload);
  uint8_t format = 0;
  uint32_t count = 0;
  CopiesDue due;
  if (!in.Get(&format) || format != kAllocWireFormat || !in.Get(&due.region) || !in.Get(&count) ||
      count > kMaxCopiesDue || in.left() != uint64_t{count} * sizeof(NodeId)) {
    return absl::DataLossError(absl::StrFormat("malformed copies-due record (%d bytes)", payload.size()));
  }
  due.nodes.resize(count);
  for (NodeId& n : due.nodes) in.Get(&n);
  return due;
}

}  // namespace farm::alloc
