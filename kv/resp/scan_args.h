// The arguments of SCAN and HSCAN as Redis 7.0 parses them (scanGenericCommand): the
// cursor, then MATCH pattern, COUNT n and (SCAN only) TYPE name, in any order, each
// given any number of times (the last one counts).
//
// Pure functions; any thread.
#ifndef FARM_KV_RESP_SCAN_ARGS_H_
#define FARM_KV_RESP_SCAN_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {

inline constexpr uint32_t kDefaultScanCount = 10;

// Redis 7.0's cursor (parseScanCursorOrReply): what strtoul reads, with no leading
// space, nothing after it and no overflow — so "-1", "+5", "007" and "" are cursors too.
// The argument ends at a NUL byte, as the C string Redis parses does. nullopt: "ERR
// invalid cursor".
std::optional<uint64_t> ParseScanCursor(absl::string_view arg);

struct ScanOptions {
  std::string pattern = "*";  // MATCH; "*" (the default) keeps everything unmatched
  uint32_t count = kDefaultScanCount;
  bool typed = false;             // TYPE given
  std::optional<ValueType> type;  // with typed: nullopt for a name no value has
  // Whether MATCH keeps `s` (a key, or a hash's field).
  bool Matches(absl::string_view s) const;
};

// The options in args[first, end); the error line to reply ("ERR syntax error", "ERR
// value is not an integer or out of range") or nullopt. TYPE only with allow_type.
std::optional<std::string> ParseScanOptions(absl::Span<const std::string> args, size_t first,
                                            bool allow_type, ScanOptions& options);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_SCAN_ARGS_H_
