#include "kv/messages.h"

#include <cstring>

#include "absl/strings/str_format.h"

namespace farm::kv {
namespace {

constexpr uint8_t kUpdateFormat = 1;
// format u8, kind u8, key length u32, value length u32, delta i64
constexpr size_t kRequestHeaderBytes = 1 + 1 + 4 + 4 + 8;
// format u8, status code u8, existed u8, number i64, message length u32
constexpr size_t kReplyHeaderBytes = 1 + 1 + 1 + 8 + 4;

template <typename T>
void Put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(v));
}
template <typename T>
T Get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

std::string EncodeUpdateRequest(const UpdateRequest& r) {
  std::string out;
  out.reserve(kRequestHeaderBytes + r.key.size() + r.value.size());
  Put<uint8_t>(out, kUpdateFormat);
  Put<uint8_t>(out, static_cast<uint8_t>(r.kind));
  Put<uint32_t>(out, static_cast<uint32_t>(r.key.size()));
  Put<uint32_t>(out, static_cast<uint32_t>(r.value.size()));
  Put<int64_t>(out, r.delta);
  out.append(r.key.data(), r.key.size());
  out.append(r.value.data(), r.value.size());
  return out;
}

absl::StatusOr<UpdateRequest> DecodeUpdateRequest(absl::string_view bytes) {
  if (bytes.size() < kRequestHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (Get<uint8_t>(p) != kUpdateFormat) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update format %d", Get<uint8_t>(p)));
  }
  const uint8_t kind = Get<uint8_t>(p + 1);
  if (kind < static_cast<uint8_t>(OpKind::kPut) || kind > static_cast<uint8_t>(OpKind::kIncrement)) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update of unknown kind %d", kind));
  }
  const uint64_t key = Get<uint32_t>(p + 2);
  const uint64_t value = Get<uint32_t>(p + 6);
  if (bytes.size() != kRequestHeaderBytes + key + value) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kv update of %d bytes does not hold its %d + %d bytes", bytes.size(), key, value));
  }
  UpdateRequest r;
  r.kind = static_cast<OpKind>(kind);
  r.delta = Get<int64_t>(p + 10);
  r.key = bytes.substr(kRequestHeaderBytes, key);
  r.value = bytes.substr(kRequestHeaderBytes + key, value);
  return r;
}

std::string EncodeUpdateReply(const KeyOpResult& r) {
  std::string out;
  const absl::string_view message = r.status.message();
  out.reserve(kReplyHeaderBytes + message.size());
  Put<uint8_t>(out, kUpdateFormat);
  Put<uint8_t>(out, static_cast<uint8_t>(r.status.code()));
  Put<uint8_t>(out, r.existed ? 1 : 0);
  Put<int64_t>(out, r.number);
  Put<uint32_t>(out, static_cast<uint32_t>(message.size()));
  out.append(message.data(), message.size());
  return out;
}

absl::StatusOr<KeyOpResult> DecodeUpdateReply(absl::string_view bytes) {
  if (bytes.size() < kReplyHeaderBytes) {
    return absl::InternalError(absl::StrFormat("kv update reply of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (Get<uint8_t>(p) != kUpdateFormat) {
    return absl::InternalError(absl::StrFormat("kv update reply format %d", Get<uint8_t>(p)));
  }
  const uint8_t code = Get<uint8_t>(p + 1);
  const uint64_t message = Get<uint32_t>(p + 11);
  if (code > static_cast<uint8_t>(absl::StatusCode::kUnauthenticated) ||
      bytes.size() != kReplyHeaderBytes + message) {
    return absl::InternalError("malformed kv update reply");
  }
  KeyOpResult r;
  r.status = absl::Status(static_cast<absl::StatusCode>(code), bytes.substr(kReplyHeaderBytes, message));
  r.existed = Get<uint8_t>(p + 2) != 0;
  r.number = Get<int64_t>(p + 3);
  return r;
}

}  // namespace farm::kv
