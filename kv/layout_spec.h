// LayoutSpec: a table layout as named in options and on command lines
// (--layout, --kv_layout): NAME or NAME:OPTION=VALUE,OPTION=VALUE, e.g. "hopscotch",
// "linear", "linear:R=8". Parsing checks the syntax only; kv/table_layouts.h checks
// the name and the options against the layouts built.
#ifndef FARM_KV_LAYOUT_SPEC_H_
#define FARM_KV_LAYOUT_SPEC_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::kv {

struct LayoutSpec {
  std::string name;
  std::vector<std::pair<std::string, std::string>> options;  // in the order given
};

// InvalidArgument for an empty name, an option that is not NAME=VALUE, or an option
// given twice.
absl::StatusOr<LayoutSpec> ParseLayoutSpec(absl::string_view text);

}  // namespace farm::kv

#endif  // FARM_KV_LAYOUT_SPEC_H_
