// Starting a program as a child process with its output in a log file; the child is
// killed when the test process dies (PR_SET_PDEATHSIG).
#ifndef FARM_TESTS_SUPPORT_SPAWN_H_
#define FARM_TESTS_SUPPORT_SPAWN_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::testing {

// Runs argv[0] (a path) with stdout and stderr appended to `log`.
absl::StatusOr<pid_t> SpawnWithLog(const std::vector<std::string>& argv, const std::string& log);

// The exit code of child `pid` once it exits within `timeout`; -1 when a signal killed
// it, -2 when it did not exit in time (it is then SIGKILLed and reaped).
int ExitCode(pid_t pid, absl::Duration timeout);

// The last `bytes` of a file, for failure messages.
std::string FileTail(const std::string& path, size_t bytes = 2000);

// The start of the first sanitizer report in a child's log (ThreadSanitizer,
// AddressSanitizer, UndefinedBehaviorSanitizer), up to `bytes` of it; empty when there
// is none. Children of a sanitizer build report there, not in the test's output.
std::string SanitizerReportIn(const std::string& log_path, size_t bytes = 4000);

// A farm_node's admin address, from its log's "ready; admin port A, ..." line (nullopt
// before the node logged it).
std::optional<std::string> LoggedAdminAddress(const std::string& log_path);

// A farm_node's kv RESP port, from its log's "kv: RESP on ... N" line (nullopt before
// the node logged it).
std::optional<uint16_t> LoggedRespPort(const std::string& log_path);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_SPAWN_H_
