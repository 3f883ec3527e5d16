// The project's log: leveled lines to one sink per process.
//
//   FARM_LOG(kInfo, "node %u: serving in epoch %d", id, epoch);
//   FARM_LOG(kWarning, "link to node %u failed (retrying): %s", peer, s.ToString());
//
// Levels: kDebug (expected events worth seeing only when debugging: start-up retries,
// reconnects), kInfo (the process's story: configuration, serving, stopping),
// kWarning (something failed and is being handled), kError (something failed that
// needs a person). A line below the process's level costs one relaxed load; its
// arguments are not formatted.
//
// Each line is "YYYY-MM-DD HH:MM:SS.uuuuuu L message" written with one write(2), so
// lines from different threads never interleave. The level and the sink (stderr, or a
// file) belong to the process: its main sets them (farm::ParseCommandLine's
// --log_level and --log_file) before starting threads; library code only writes.
//
// Why not a library: Debian 12's Abseil predates absl/log, and what the project needs
// (levels, a per-process sink, whole lines) is smaller than spdlog/fmt or glog's
// process-wide flags and signal handlers.
#ifndef FARM_BASE_LOG_H_
#define FARM_BASE_LOG_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace farm {

enum class LogLevel : int { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// "debug", "info", "warning", "error"; InvalidArgument otherwise.
absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name);

// Process set-up, from main: the lowest level written (default kInfo), and the file
// descriptor lines go to (default 2, stderr; not closed by the log).
void SetLogLevel(LogLevel level);
void SetLogFd(int fd);

bool LogEnabled(LogLevel level);
void LogLine(LogLevel level, absl::string_view message);

}  // namespace farm

#define FARM_LOG(level, ...)                                                    \
  do {                                                                          \
    if (::farm::LogEnabled(::farm::LogLevel::level)) {                          \
      ::farm::LogLine(::farm::LogLevel::level, ::absl::StrFormat(__VA_ARGS__)); \
    }                                                                           \
  } while (false)

#endif  // FARM_BASE_LOG_H_
