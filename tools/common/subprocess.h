// Subprocess: a child process with its stdin and stdout on pipes, one line per message.
// Used by benchmarks (a server in its own process) and by multi-process tests.
//
// The child dies with the parent (PR_SET_PDEATHSIG) and is killed when the Subprocess
// is destroyed, so a failed run leaves nothing behind. Not thread-safe.
#ifndef FARM_TOOLS_COMMON_SUBPROCESS_H_
#define FARM_TOOLS_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"

namespace farm {

class Subprocess {
 public:
  // Runs `argv[0]` (a path) with `argv`. Use "/proc/self/exe" to run this binary again.
  static absl::StatusOr<Subprocess> Spawn(const std::vector<std::string>& argv);

  Subprocess(Subprocess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        to_child_(std::move(other.to_child_)),
        from_child_(std::move(other.from_child_)),
        buffer_(std::move(other.buffer_)) {}
  Subprocess& operator=(Subprocess&&) = delete;
  ~Subprocess();

  pid_t pid() const { return pid_; }

  // The next line the child printed, without the newline. DeadlineExceeded when none
  // arrives in time; Unavailable when the child closed its stdout.
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  // Reads lines until one starts with `prefix`, and returns it.
  absl::StatusOr<std::string> ReadLineStartingWith(const std::string& prefix,
                                                   absl::Duration timeout);
  absl::Status WriteLine(const std::string& line);

  void Kill(int signal);
  // Waits for exit; returns the exit code, or 128 + signal when killed.
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  Subprocess() = default;
  pid_t pid_ = -1;
  UniqueFd to_child_;
  UniqueFd from_child_;
  std::string buffer_;
};

}  // namespace farm

#endif  // FARM_TOOLS_COMMON_SUBPROCESS_H_
