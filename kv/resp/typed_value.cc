#include "kv/resp/typed_value.h"

#include "absl/strings/str_cat.h"

namespace farm::kv::resp {
namespace {

constexpr size_t kMaxVarintBytes = 10;

absl::Status Corrupt(absl::string_view what) {
  return absl::DataLossError(absl::StrCat("a stored hash is corrupt (", what, ")"));
}

size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void AppendVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

// Reads a varint from the front of `in` and advances past it; false when it is cut
// short or longer than 10 bytes or 64 bits.
bool ReadVarint(absl::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < kMaxVarintBytes && i < in->size(); ++i) {
    const uint64_t byte = static_cast<uint8_t>((*in)[i]);
    if (i == kMaxVarintBytes - 1 && byte > 1) return false;  // over 64 bits
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      in->remove_prefix(i + 1);
      *v = result;
      return true;
    }
  }
  return false;
}

// A length-prefixed byte string from the front of `in`.
bool ReadSized(absl::string_view* in, absl::string_view* out) {
  uint64_t size = 0;
  if (!ReadVarint(in, &size) || size > in->size()) return false;
  *out = in->substr(0, size);
  in->remove_prefix(size);
  return true;
}

// Checks the version and reads the count; `body` is left at the first pair.
absl::StatusOr<uint64_t> ReadHeader(absl::string_view* body) {
  if (body->empty()) return Corrupt("no version byte");
  if (static_cast<uint8_t>((*body)[0]) != kHashVersion) {
    return Corrupt(absl::StrCat("unknown version ", static_cast<uint8_t>((*body)[0])));
  }
  body->remove_prefix(1);
  uint64_t count = 0;
  if (!ReadVarint(body, &count)) return Corrupt("field count cut short");
  // Invariant 1, and each pair takes at least two bytes.
  if (count == 0 || count > body->size() / 2) {
    return Corrupt(absl::StrCat("field count ", count, " in ", body->size(), " bytes"));
  }
  return count;
}

}  // namespace

absl::StatusOr<TypedView> DecodeStored(absl::string_view stored) {
  if (!NeedsEscape(stored)) return TypedView{ValueType::kString, stored};
  if (stored.size() < 2) return absl::DataLossError("a stored value has a type marker but no type");
  switch (stored[1]) {
    case kEscapedStringTag:
      return TypedView{ValueType::kString, stored.substr(1)};
    case kHashTag:
      return TypedView{ValueType::kHash, stored.substr(2)};
    default:
      return absl::DataLossError(
          absl::StrCat("a stored value has an unknown type tag ", static_cast<uint8_t>(stored[1])));
  }
}

std::string EscapeString(absl::string_view s) {
  std::string out;
  out.reserve(s.size() + 1);
  out.push_back(kTypedMarker);
  out.append(s.data(), s.size());
  return out;
}

absl::StatusOr<uint64_t> HashLength(absl::string_view body) { return ReadHeader(&body); }

absl::Status ForEachField(absl::string_view body,
                          absl::FunctionRef<bool(absl::string_view, absl::string_view)> fn) {
  absl::StatusOr<uint64_t> count = ReadHeader(&body);
  if (!count.ok()) return count.status();
  for (uint64_t i = 0; i < *count; ++i) {
    absl::string_view field, value;
    if (!ReadSized(&body, &field) || !ReadSized(&body, &value)) {
      return Corrupt(absl::StrCat("pair ", i, " of ", *count, " cut short"));
    }
    if (!fn(field, value)) return absl::OkStatus();
  }
  if (!body.empty()) return Corrupt(absl::StrCat(body.size(), " bytes after the last pair"));
  return absl::OkStatus();
}

absl::StatusOr<std::optional<absl::string_view>> FindField(absl::string_view body,
                                                           absl::string_view field) {
  std::optional<absl::string_view> found;
  absl::Status s = ForEachField(body, [&](absl::string_view f, absl::string_view v) {
    if (f != field) return true;
    found = v;
    return false;
  });
  if (!s.ok()) return s;
  return found;
}

absl::Status DecodeHash(absl::string_view body, std::vector<HashPair>* pairs) {
  absl::StatusOr<uint64_t> count = HashLength(body);
  if (!count.ok()) return count.status();
  pairs->reserve(pairs->size() + *count);
  return ForEachField(body, [pairs](absl::string_view f, absl::string_view v) {
    pairs->emplace_back(f, v);
    return true;
  });
}

size_t EncodedHashSize(absl::Span<const HashPair> pairs) {
  size_t size = 3 + VarintSize(pairs.size());  // marker, tag, version, count
  for (const auto& [field, value] : pairs) {
    size += VarintSize(field.size()) + field.size() + VarintSize(value.size()) + value.size();
  }
  return size;
}

std::string EncodeHash(absl::Span<const HashPair> pairs) {
  std::string out;
  out.reserve(EncodedHashSize(pairs));
  out.push_back(kTypedMarker);
  out.push_back(kHashTag);
  out.push_back(static_cast<char>(kHashVersion));
  AppendVarint(&out, pairs.size());
  for (const auto& [field, value] : pairs) {
    AppendVarint(&out, field.size());
    out.append(field.data(), field.size());
    AppendVarint(&out, value.size());
    out.append(value.data(), value.size());
  }
  return out;
}

}  // namespace farm::kv::resp
