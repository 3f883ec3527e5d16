#include "kv/resp/scan_args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "kv/resp/glob_match.h"
#include "resp/strict_int.h"

namespace farm::kv::resp {

std::optional<uint64_t> ParseScanCursor(absl::string_view arg) {
  const std::string s(arg.substr(0, arg.find('\0')));
  if (!s.empty() && std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long value =
      std::strtoul(s.c_str(), &end, 10);  // NOLINT(runtime/int): Redis's type
  if (*end != '\0' || errno == ERANGE) return std::nullopt;
  return value;
}

bool ScanOptions::Matches(absl::string_view s) const {
  return pattern == "*" || GlobMatch(pattern, s);
}

std::optional<std::string> ParseScanOptions(absl::Span<const std::string> args, size_t first,
                                            bool allow_type, ScanOptions& options) {
  for (size_t i = first; i < args.size(); i += 2) {
    const bool has_value = i + 1 < args.size();
    if (has_value && absl::EqualsIgnoreCase(args[i], "count")) {
      int64_t n = 0;
      if (!::farm::resp::ParseStrictInt64(args[i + 1], &n))
        return "ERR value is not an integer or out of range";
      if (n < 1) return "ERR syntax error";
      options.count = static_cast<uint32_t>(std::min<int64_t>(n, UINT32_MAX));
    } else if (has_value && absl::EqualsIgnoreCase(args[i], "match")) {
      options.pattern = args[i + 1];
    } else if (has_value && allow_type && absl::EqualsIgnoreCase(args[i], "type")) {
      options.typed = true;
      const std::string name = absl::AsciiStrToLower(args[i + 1]);
      options.type = name == "string" ? std::optional(ValueType::kString)
                     : name == "hash" ? std::optional(ValueType::kHash)
                                      : std::nullopt;
    } else {
      return "ERR syntax error";
    }
  }
  return std::nullopt;
}

}  // namespace farm::kv::resp
