// Redis's long doubles as strings, for INCRBYFLOAT and HINCRBYFLOAT: parsed as Redis 7's
// string2ld parses them and formatted as its ld2string does in human mode, so that the
// values stored and answered are Redis's byte for byte.
//
// Pure functions; any thread.
#ifndef FARM_KV_RESP_FLOAT_VALUE_H_
#define FARM_KV_RESP_FLOAT_VALUE_H_

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace farm::kv::resp {

// The value of `s` (strtold's syntax: decimal, hex, inf), or nullopt when it is empty,
// over 5 KiB, starts with a space, has bytes strtold does not take (a NUL included), is
// NaN, or overflows or underflows to zero.
std::optional<long double> ParseRedisLongDouble(absl::string_view s);

// `v` with 17 digits after the point, trailing zeros (and a bare point) removed, "-0"
// written "0"; "inf"/"-inf" for infinities.
std::string FormatRedisLongDouble(long double v);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_FLOAT_VALUE_H_
