#include "farm/base/log.h"

#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace farm {
namespace {

// The process's log settings (see log.h: set by main before threads start; atomics so
// that a later change is still well defined).
std::atomic<int> min_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> sink_fd{STDERR_FILENO};

char LevelLetter(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return 'D';
    case LogLevel::kInfo:
      return 'I';
    case LogLevel::kWarning:
      return 'W';
    case LogLevel::kError:
      return 'E';
  }
  return '?';
}

}  // namespace

absl::StatusOr<LogLevel> ParseLogLevel(absl::string_view name) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "debug") return LogLevel::kDebug;
  if (n == "info") return LogLevel::kInfo;
  if (n == "warning") return LogLevel::kWarning;
  if (n == "error") return LogLevel::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown log level '", name, "' (debug, info, warning or error)"));
}

void SetLogLevel(LogLevel level) {
  min_level.store(static_cast<int>(level), std::memory_order_relaxed);
}

void SetLogFd(int fd) { sink_fd.store(fd, std::memory_order_relaxed); }

bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) >= min_level.load(std::memory_order_relaxed);
}

void LogLine(LogLevel level, absl::string_view message) {
  struct timeval now;
  ::gettimeofday(&now, nullptr);
  struct tm local;
  ::localtime_r(&now.tv_sec, &local);
  char stamp[32];
  const size_t n = ::strftime(stamp, sizeof(stamp), "%Y-%m-%d %H:%M:%S", &local);
  std::string line =
      absl::StrFormat("%s.%06d %c ", absl::string_view(stamp, n), now.tv_usec, LevelLetter(level));
  line.append(message.data(), message.size());
  if (line.empty() || line.back() != '\n') line.push_back('\n');
  const int fd = sink_fd.load(std::memory_order_relaxed);
  for (size_t off = 0; off < line.size();) {
    const ssize_t w = ::write(fd, line.data() + off, line.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // nowhere to report a failing log
    off += static_cast<size_t>(w);
  }
}

}  // namespace farm
