#include "kv/resp/float_value.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace farm::kv::resp {
namespace {

// Redis's MAX_LONG_DOUBLE_CHARS: room for any long double with 17 decimals.
constexpr size_t kMaxLongDoubleChars = 5 * 1024;

}  // namespace

std::optional<long double> ParseRedisLongDouble(absl::string_view s) {
  if (s.empty() || s.size() >= kMaxLongDoubleChars) return std::nullopt;
  char buf[kMaxLongDoubleChars];
  std::memcpy(buf, s.data(), s.size());
  buf[s.size()] = '\0';
  errno = 0;
  char* end = nullptr;
  const long double value = std::strtold(buf, &end);
  const bool out_of_range =
      errno == ERANGE && (value == HUGE_VALL || value == -HUGE_VALL || std::fpclassify(value) == FP_ZERO);
  if (std::isspace(static_cast<unsigned char>(buf[0])) || end != buf + s.size() || out_of_range || errno == EINVAL ||
      std::isnan(value)) {
    return std::nullopt;
  }
  return value;
}

std::string FormatRedisLongDouble(long double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[kMaxLongDoubleChars];
  const int n = std::snprintf(buf, sizeof(buf), "%.17Lf", v);
  if (n < 0 || static_cast<size_t>(n) + 1 > sizeof(buf)) return "";  // cannot happen: the buffer fits any
  size_t len = static_cast<size_t>(n);
  if (std::memchr(buf, '.', len) != nullptr) {
    while (buf[len - 1] == '0') --len;
    if (buf[len - 1] == '.') --len;
  }
  if (len == 2 && buf[0] == '-' && buf[1] == '0') return "0";
  return std::string(buf, len);
}

}  // namespace farm::kv::resp
