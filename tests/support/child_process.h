// Multi-process tests: a test binary re-executes itself to run a named child role in a
// separate OS process, talking to the parent over its stdin and stdout, one line per
// message.
//
//   FARM_CHILD_ROLE(owner) { ...; std::printf("READY %s\n", ...); ...; return 0; }
//   ...
//   absl::StatusOr<ChildProcess> child = ChildProcess::Spawn("owner", {"arg"});
//   absl::StatusOr<std::string> line = child->ReadLine(absl::Seconds(10));
//
// Binaries using this link tests/support's test_main instead of gtest_main. Children
// die with their parent (PR_SET_PDEATHSIG), so a failed test leaves no process behind.
#ifndef FARM_TESTS_SUPPORT_CHILD_PROCESS_H_
#define FARM_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"

namespace farm::testing {

using ChildRole = std::function<int(const std::vector<std::string>& args)>;

// Registers a role; used through FARM_CHILD_ROLE at namespace scope.
bool RegisterChildRole(const std::string& name, ChildRole role);

#define FARM_CHILD_ROLE(name)                                                       \
  static int FarmChildRole_##name(const std::vector<std::string>& args);           \
  static const bool farm_child_role_registered_##name =                            \
      ::farm::testing::RegisterChildRole(#name, &FarmChildRole_##name);            \
  static int FarmChildRole_##name([[maybe_unused]] const std::vector<std::string>& args)

class ChildProcess {
 public:
  static absl::StatusOr<ChildProcess> Spawn(const std::string& role,
                                            const std::vector<std::string>& args);
  ChildProcess(ChildProcess&& other) noexcept
      : pid_(std::exchange(other.pid_, -1)),
        to_child_(std::move(other.to_child_)),
        from_child_(std::move(other.from_child_)),
        buffer_(std::move(other.buffer_)) {}
  ChildProcess& operator=(ChildProcess&&) = delete;
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~ChildProcess();

  pid_t pid() const { return pid_; }

  // The next line the child printed (without the newline). DeadlineExceeded when none
  // arrives in time; Unavailable when the child closed its stdout.
  absl::StatusOr<std::string> ReadLine(absl::Duration timeout);
  // Reads lines until one starts with `prefix`; returns it.
  absl::StatusOr<std::string> ReadLineStartingWith(const std::string& prefix,
                                                   absl::Duration timeout);
  absl::Status WriteLine(const std::string& line);

  void Kill(int signal);
  // Waits for the child to exit; returns its exit code (128 + signal when killed).
  absl::StatusOr<int> Wait(absl::Duration timeout);

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  UniqueFd to_child_;
  UniqueFd from_child_;
  std::string buffer_;
};

// Dispatches to a child role when argv asks for one, else runs the tests. Returns the
// process exit code.
int RunTestMain(int argc, char** argv);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_CHILD_PROCESS_H_
