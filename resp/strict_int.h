// ParseStrictInt64: Redis's rule for integers on the wire and in arguments (string2ll):
// an optional '-', then decimal digits without leading zeros ("0" alone is fine; "-0",
// "+1", " 1", "01", "" are not), within int64_t.
#ifndef FARM_RESP_STRICT_INT_H_
#define FARM_RESP_STRICT_INT_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace farm::resp {

bool ParseStrictInt64(absl::string_view s, int64_t* out);

}  // namespace farm::resp

#endif  // FARM_RESP_STRICT_INT_H_
