// Redis's glob patterns (KEYS, SCAN MATCH), as its stringmatchlen matches them,
// case-sensitive:
//   *        any run of bytes, the empty one included
//   ?        one byte
//   [abc]    one byte of the set; [^abc] one byte not in it; [a-z] a range (its ends in
//            either order, compared as signed chars, as Redis does where char is
//            signed, x86 included); \x inside a set is x
//   \x       x itself (a trailing \ matches itself)
// An unclosed set runs to the end of the pattern. Patterns and strings are binary-safe.
// As in Redis, the empty string matches only the empty pattern (not even "*": KEYS and
// SCAN take a lone "*" to mean every key without matching, and so do their callers here).
// A run of stars tries each split once: no pattern makes a match exponential (Redis's
// skipLongerMatches); and, as Redis 7.2 does, more than 1,000 stars nested in one
// match answer no match instead of recursing deeper (the stack stays bounded).
//
// Pure function; any thread.
#ifndef FARM_KV_RESP_GLOB_MATCH_H_
#define FARM_KV_RESP_GLOB_MATCH_H_

#include "absl/strings/string_view.h"

namespace farm::kv::resp {

bool GlobMatch(absl::string_view pattern, absl::string_view s);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_GLOB_MATCH_H_
