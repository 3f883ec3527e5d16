#include "kv/resp/glob_match.h"

#include <cstddef>
#include <utility>

namespace farm::kv::resp {
namespace {

// Redis walks NUL-terminated strings and reads the terminator at a pattern's end; a
// position past the end reads as '\0' here to match it byte for byte.
class Pattern {
 public:
  explicit Pattern(absl::string_view p) : p_(p) {}
  signed char at(size_t i) const { return i < p_.size() ? static_cast<signed char>(p_[i]) : '\0'; }
  size_t size() const { return p_.size(); }

 private:
  absl::string_view p_;
};

// Stars nested deeper than this answer no match (Redis 7.2's bound).
constexpr int kMaxNesting = 1000;

// Matches pattern[p, end) against s[i, end). *skip_longer: a star further left need
// not try longer prefixes (none can match once a suffix failed everywhere). `nesting`:
// the stars this match is inside.
bool Match(const Pattern& pattern, size_t p, absl::string_view s, size_t i, bool* skip_longer,
           int nesting) {
  if (nesting > kMaxNesting) return false;
  size_t plen = pattern.size() - p;
  size_t slen = s.size() - i;
  auto next_pattern = [&] {
    ++p;
    --plen;
  };
  auto next_string = [&] {
    ++i;
    --slen;
  };
  while (plen > 0 && slen > 0) {
    switch (pattern.at(p)) {
      case '*': {
        while (plen > 0 && pattern.at(p + 1) == '*') next_pattern();
        if (plen == 1) return true;
        while (slen > 0) {
          if (Match(pattern, p + 1, s, i, skip_longer, nesting + 1)) return true;
          if (*skip_longer) return false;
          next_string();
        }
        *skip_longer = true;
        return false;
      }
      case '?':
        next_string();
        break;
      case '[': {
        next_pattern();
        const bool negate = pattern.at(p) == '^';
        if (negate) next_pattern();
        const signed char c = static_cast<signed char>(s[i]);
        bool match = false;
        while (true) {
          if (pattern.at(p) == '\\' && plen >= 2) {
            next_pattern();
            if (pattern.at(p) == c) match = true;
          } else if (pattern.at(p) == ']') {
            break;
          } else if (plen == 0) {
            --p;  // the loop's step below leaves the pattern at its end
            ++plen;
            break;
          } else if (plen >= 3 && pattern.at(p + 1) == '-') {
            int start = pattern.at(p);
            int end = pattern.at(p + 2);
            if (start > end) std::swap(start, end);
            p += 2;
            plen -= 2;
            if (c >= start && c <= end) match = true;
          } else if (pattern.at(p) == c) {
            match = true;
          }
          next_pattern();
        }
        if (negate) match = !match;
        if (!match) return false;
        next_string();
        break;
      }
      case '\\':
        if (plen >= 2) next_pattern();
        [[fallthrough]];
      default:
        if (pattern.at(p) != static_cast<signed char>(s[i])) return false;
        next_string();
        break;
    }
    next_pattern();
    if (slen == 0) {
      while (plen > 0 && pattern.at(p) == '*') next_pattern();
      break;
    }
  }
  return plen == 0 && slen == 0;
}

}  // namespace

bool GlobMatch(absl::string_view pattern, absl::string_view s) {
  bool skip_longer = false;
  return Match(Pattern(pattern), 0, s, 0, &skip_longer, 0);
}

}  // namespace farm::kv::resp
