#include "tests/tx/serializability_protocol.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace farm::tx::testing {
namespace {

std::string FormatPtr(const FatPtr& p) {
  return absl::StrFormat("%x:%d:%d", p.addr.raw(), p.size, p.incarnation);
}

bool ParsePtr(absl::string_view s, FatPtr* p) {
  std::vector<absl::string_view> f = absl::StrSplit(s, ':');
  uint64_t raw;
  return f.size() == 3 && absl::SimpleHexAtoi(f[0], &raw) && absl::SimpleAtoi(f[1], &p->size) &&
         absl::SimpleAtoi(f[2], &p->incarnation) && (p->addr = Addr::FromRaw(raw), true);
}

}  // namespace

std::vector<FatPtr> ParsePtrs(const std::vector<std::string>& words, size_t from) {
  std::vector<FatPtr> out;
  for (size_t i = from; i < words.size(); ++i) {
    FatPtr p;
    if (ParsePtr(words[i], &p)) out.push_back(p);
  }
  return out;
}

std::string FormatPtrs(const std::vector<FatPtr>& ptrs) {
  return absl::StrJoin(ptrs, " ",
                       [](std::string* out, const FatPtr& p) { out->append(FormatPtr(p)); });
}

uint64_t Field(absl::string_view line, absl::string_view key) {
  for (absl::string_view w : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (w.size() > key.size() && w.substr(0, key.size()) == key && w[key.size()] == '=') {
      int64_t v = 0;
      if (absl::SimpleAtoi(w.substr(key.size() + 1), &v)) return static_cast<uint64_t>(v);
    }
  }
  return 0;
}

}  // namespace farm::tx::testing
