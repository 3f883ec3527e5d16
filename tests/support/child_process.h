// Multi-process tests: a test binary re-executes itself to run a named child role in a
// separate OS process, talking to the parent over its stdin and stdout, one line per
// message.
//
//   FARM_CHILD_ROLE(owner) { ...; std::printf("READY %s\n", ...); ...; return 0; }
//   ...
//   absl::StatusOr<ChildProcess> child = SpawnChild("owner", {"arg"});
//   absl::StatusOr<std::string> line = child->ReadLine(absl::Seconds(10));
//
// Binaries using this link farm_test_main instead of gtest_main. Children die with
// their parent, so a failed test leaves no process behind.
#ifndef FARM_TESTS_SUPPORT_CHILD_PROCESS_H_
#define FARM_TESTS_SUPPORT_CHILD_PROCESS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "tools/common/subprocess.h"

namespace farm::testing {

using ChildRole = std::function<int(const std::vector<std::string>& args)>;

// Registers a role; used through FARM_CHILD_ROLE at namespace scope.
bool RegisterChildRole(const std::string& name, ChildRole role);

#define FARM_CHILD_ROLE(name)                                                       \
  static int FarmChildRole_##name(const std::vector<std::string>& args);           \
  static const bool farm_child_role_registered_##name =                            \
      ::farm::testing::RegisterChildRole(#name, &FarmChildRole_##name);            \
  static int FarmChildRole_##name([[maybe_unused]] const std::vector<std::string>& args)

// A child running a role of this binary (see tools/common/subprocess.h for the API).
using ChildProcess = ::farm::Subprocess;
absl::StatusOr<ChildProcess> SpawnChild(const std::string& role,
                                        const std::vector<std::string>& args);

// Dispatches to a child role when argv asks for one, else runs the tests. Returns the
// process exit code.
int RunTestMain(int argc, char** argv);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_CHILD_PROCESS_H_
