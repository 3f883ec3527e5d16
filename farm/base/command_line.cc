#include "farm/base/command_line.h"

#include <fcntl.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "farm/base/log.h"

ABSL_FLAG(std::string, log_level, "info", "lowest level logged: debug, info, warning or error");
ABSL_FLAG(std::string, log_file, "", "append the log to this file (empty: stderr)");

namespace farm {

std::vector<char*> ParseCommandLine(int argc, char** argv, absl::string_view usage) {
  absl::FlagsUsageConfig config;
  // A flag's file as Abseil records it: a path, absl/ for Abseil's own flags.
  auto ours = [](absl::string_view file) { return !absl::StrContains(file, "absl/"); };
  config.contains_help_flags = ours;
  config.contains_helpshort_flags = ours;
  absl::SetFlagsUsageConfig(config);
  absl::SetProgramUsageMessage(std::string(usage));
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  absl::StatusOr<LogLevel> level = ParseLogLevel(absl::GetFlag(FLAGS_log_level));
  if (!level.ok()) {
    FARM_LOG(kError, "%s: --log_level: %s", argv[0], level.status().message());
    std::exit(2);
  }
  SetLogLevel(*level);
  if (const std::string file = absl::GetFlag(FLAGS_log_file); !file.empty()) {
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) {
      // Still on the default sink (stderr): the log has not moved yet.
      FARM_LOG(kError, "%s: --log_file %s: %s", argv[0], file, std::strerror(errno));
      std::exit(2);
    }
    SetLogFd(fd);  // open for the life of the process
  }
  return args;
}

}  // namespace farm
