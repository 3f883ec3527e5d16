#include "farm/base/command_line.h"

#include <string>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"

namespace farm {

std::vector<char*> ParseCommandLine(int argc, char** argv, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  // A flag's file as Abseil records it: a path, absl/ for Abseil's own flags.
  auto ours = [](absl::string_view file) { return !absl::StrContains(file, "absl/"); };
  config.contains_help_flags = ours;
  config.contains_helpshort_flags = ours;
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(std::string(usage));
  return absl::ParseCommandLine(argc, argv);
}

}  // namespace farm
