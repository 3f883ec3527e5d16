#include "kv/chained/bucket_format.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace farm::kv::chained {
namespace {

template <typename T>
T Load(std::span<const char> b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

template <typename T>
void Store(std::span<char> b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

FatPtr LoadPtr(std::span<const char> b, size_t at) {
  FatPtr p;
  p.addr = Addr::FromRaw(Load<uint64_t>(b, at));
  p.size = Load<uint32_t>(b, at + 8);
  p.incarnation = Load<uint32_t>(b, at + 12);
  return p;
}

void StorePtr(std::span<char> b, size_t at, FatPtr p) {
  Store<uint64_t>(b, at, p.addr.raw());
  Store<uint32_t>(b, at + 8, p.size);
  Store<uint32_t>(b, at + 12, p.incarnation);
}

}  // namespace

absl::Status BucketLayout::Validate() const {
  if (slots_per_bucket < 1 || slots_per_bucket > kMaxSlotsPerBucket) {
    return absl::InvalidArgumentError(
        absl::StrFormat("chained: %d slots per bucket (must be in [1, %d])", slots_per_bucket, kMaxSlotsPerBucket));
  }
  if (inline_key_bytes > kMaxInlineBytes || inline_value_bytes > kMaxInlineBytes) {
    return absl::InvalidArgumentError("chained: inline key and value sizes must be <= 255");
  }
  return absl::OkStatus();
}

absl::Status CheckBucket(std::span<const char> bucket, const BucketLayout& layout) {
  if (bucket.size() < layout.bucket_bytes()) {
    return absl::InternalError(absl::StrFormat("chained: bucket of %d bytes", bucket.size()));
  }
  if (bucket[0] == 0) return absl::OkStatus();
  if (static_cast<uint8_t>(bucket[0]) != kBucketTag) {
    return absl::InternalError(absl::StrFormat("chained: bucket tag %d", static_cast<uint8_t>(bucket[0])));
  }
  const TableLayout table = layout.AsTableLayout();
  for (uint32_t i = 0; i < layout.slots_per_bucket; ++i) {
    if (absl::Status s = CheckSlot(BucketSlotAt(bucket, layout, i), table); !s.ok()) return s;
  }
  return absl::OkStatus();
}

bool IsMoved(std::span<const char> bucket) { return (static_cast<uint8_t>(bucket[1]) & kMovedFlag) != 0; }

uint32_t ChainPairs(std::span<const char> head) { return Load<uint16_t>(head, 2); }

FatPtr NextBlock(std::span<const char> bucket) { return LoadPtr(bucket, 8); }

std::span<const char> BucketSlotAt(std::span<const char> bucket, const BucketLayout& layout, uint32_t i) {
  return bucket.subspan(kBucketHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}

std::span<char> BucketSlotAt(std::span<char> bucket, const BucketLayout& layout, uint32_t i) {
  return bucket.subspan(kBucketHeaderBytes + i * layout.slot_bytes(), layout.slot_bytes());
}

void WriteBucketHeader(std::span<char> bucket, uint8_t flags, uint32_t chain_pairs, FatPtr next) {
  bucket[0] = static_cast<char>(kBucketTag);
  bucket[1] = static_cast<char>(flags);
  Store<uint16_t>(bucket, 2, static_cast<uint16_t>(chain_pairs));
  Store<uint32_t>(bucket, 4, 0);
  StorePtr(bucket, 8, next);
}

RootState ReadRoot(std::span<const char> root) {
  RootState s;
  if (static_cast<uint8_t>(root[0]) != kRootTag) return s;
  s.expansions = Load<uint32_t>(root, 4);
  s.current.directory = LoadPtr(root, 8);
  s.current.buckets = Load<uint64_t>(root, 24);
  s.next.directory = LoadPtr(root, 32);
  s.next.buckets = Load<uint64_t>(root, 48);
  return s;
}

void WriteRoot(std::span<char> root, const RootState& state) {
  root[0] = static_cast<char>(kRootTag);
  root[1] = 0;
  Store<uint16_t>(root, 2, 0);
  Store<uint32_t>(root, 4, state.expansions);
  StorePtr(root, 8, state.current.directory);
  Store<uint64_t>(root, 24, state.current.buckets);
  StorePtr(root, 32, state.next.directory);
  Store<uint64_t>(root, 48, state.next.buckets);
}

uint32_t DirectoryBytes(size_t runs) { return static_cast<uint32_t>(16 + runs * 24); }

}  // namespace farm::kv::chained
