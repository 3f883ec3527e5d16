#include "kv/messages.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/api/wire.h"

namespace farm::kv {
namespace {

constexpr uint8_t kUpdateFormat = 1;
// format u8, kind u8, key length u32, value length u32, delta i64
constexpr size_t kRequestHeaderBytes = 1 + 1 + 4 + 4 + 8;
// format u8, status code u8, existed u8, number i64, message length u32
constexpr size_t kReplyHeaderBytes = 1 + 1 + 1 + 8 + 4;


}  // namespace

size_t UpdateRequestBytes(const UpdateRequest& r) {
  return kRequestHeaderBytes + r.key.size() + r.value.size();
}

void WriteUpdateRequest(const UpdateRequest& r, char* dst) {
  StoreLe<uint8_t>(dst, kUpdateFormat);
  StoreLe<uint8_t>(dst + 1, static_cast<uint8_t>(r.kind));
  StoreLe<uint32_t>(dst + 2, static_cast<uint32_t>(r.key.size()));
  StoreLe<uint32_t>(dst + 6, static_cast<uint32_t>(r.value.size()));
  StoreLe<int64_t>(dst + 10, r.delta);
  if (!r.key.empty()) std::memcpy(dst + kRequestHeaderBytes, r.key.data(), r.key.size());
  if (!r.value.empty()) std::memcpy(dst + kRequestHeaderBytes + r.key.size(), r.value.data(), r.value.size());
}

std::string EncodeUpdateRequest(const UpdateRequest& r) {
  std::string out(UpdateRequestBytes(r), '\0');
  WriteUpdateRequest(r, out.data());
  return out;
}

absl::StatusOr<UpdateRequest> DecodeUpdateRequest(absl::string_view bytes) {
  if (bytes.size() < kRequestHeaderBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (LoadLe<uint8_t>(p) != kUpdateFormat) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update format %d", LoadLe<uint8_t>(p)));
  }
  const uint8_t kind = LoadLe<uint8_t>(p + 1);
  if (kind < static_cast<uint8_t>(OpKind::kPut) || kind > static_cast<uint8_t>(OpKind::kIncrement)) {
    return absl::InvalidArgumentError(absl::StrFormat("kv update of unknown kind %d", kind));
  }
  const uint64_t key = LoadLe<uint32_t>(p + 2);
  const uint64_t value = LoadLe<uint32_t>(p + 6);
  if (bytes.size() != kRequestHeaderBytes + key + value) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kv update of %d bytes does not hold its %d + %d bytes", bytes.size(), key, value));
  }
  UpdateRequest r;
  r.kind = static_cast<OpKind>(kind);
  r.delta = LoadLe<int64_t>(p + 10);
  r.key = bytes.substr(kRequestHeaderBytes, key);
  r.value = bytes.substr(kRequestHeaderBytes + key, value);
  return r;
}

std::string EncodeUpdateReply(const KeyOpResult& r) {
  std::string out;
  const absl::string_view message = r.status.message();
  out.reserve(kReplyHeaderBytes + message.size());
  WireWriter w(&out);
  w.Put<uint8_t>(kUpdateFormat);
  w.Put<uint8_t>(static_cast<uint8_t>(r.status.code()));
  w.Put<uint8_t>(r.existed ? 1 : 0);
  w.Put<int64_t>(r.number);
  w.Put<uint32_t>(static_cast<uint32_t>(message.size()));
  out.append(message.data(), message.size());
  return out;
}

absl::StatusOr<KeyOpResult> DecodeUpdateReply(absl::string_view bytes) {
  if (bytes.size() < kReplyHeaderBytes) {
    return absl::InternalError(absl::StrFormat("kv update reply of %d bytes is too short", bytes.size()));
  }
  const char* p = bytes.data();
  if (LoadLe<uint8_t>(p) != kUpdateFormat) {
    return absl::InternalError(absl::StrFormat("kv update reply format %d", LoadLe<uint8_t>(p)));
  }
  const uint8_t code = LoadLe<uint8_t>(p + 1);
  const uint64_t message = LoadLe<uint32_t>(p + 11);
  if (code > static_cast<uint8_t>(absl::StatusCode::kUnauthenticated) ||
      bytes.size() != kReplyHeaderBytes + message) {
    return absl::InternalError("malformed kv update reply");
  }
  KeyOpResult r;
  r.status = absl::Status(static_cast<absl::StatusCode>(code), bytes.substr(kReplyHeaderBytes, message));
  r.existed = LoadLe<uint8_t>(p + 2) != 0;
  r.number = LoadLe<int64_t>(p + 3);
  return r;
}

}  // namespace farm::kv
