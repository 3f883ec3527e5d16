#include "kv/layout_spec.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace farm::kv {

absl::StatusOr<LayoutSpec> ParseLayoutSpec(absl::string_view text) {
  LayoutSpec spec;
  const size_t colon = text.find(':');
  spec.name = std::string(absl::StripAsciiWhitespace(text.substr(0, colon)));
  if (spec.name.empty()) return absl::InvalidArgumentError(absl::StrCat("table layout \"", text, "\" has no name"));
  if (colon == absl::string_view::npos) return spec;
  for (absl::string_view option : absl::StrSplit(text.substr(colon + 1), ',')) {
    const size_t eq = option.find('=');
    if (eq == absl::string_view::npos || eq == 0 || eq + 1 == option.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("table layout \"", text, "\": option \"", option, "\" is not NAME=VALUE"));
    }
    std::string name(option.substr(0, eq));
    for (const auto& [seen, value] : spec.options) {
      if (seen == name) {
        return absl::InvalidArgumentError(absl::StrCat("table layout \"", text, "\" gives ", name, " twice"));
      }
    }
    spec.options.emplace_back(std::move(name), std::string(option.substr(eq + 1)));
  }
  return spec;
}

}  // namespace farm::kv
