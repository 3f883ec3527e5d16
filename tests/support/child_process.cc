#include "tests/support/child_process.h"

#include <cstdio>
#include <cstring>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace farm::testing {
namespace {

constexpr char kRoleFlag[] = "--farm_child_role=";

std::map<std::string, ChildRole>& Roles() {
  static auto* roles = new std::map<std::string, ChildRole>();
  return *roles;
}

}  // namespace

bool RegisterChildRole(const std::string& name, ChildRole role) {
  Roles()[name] = std::move(role);
  return true;
}

absl::StatusOr<ChildProcess> SpawnChild(const std::string& role,
                                        const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/proc/self/exe", kRoleFlag + role};
  argv.insert(argv.end(), args.begin(), args.end());
  return Subprocess::Spawn(argv);
}

int RunTestMain(int argc, char** argv) {
  if (argc >= 2 && absl::StartsWith(argv[1], kRoleFlag)) {
    const std::string role = argv[1] + std::strlen(kRoleFlag);
    auto it = Roles().find(role);
    if (it == Roles().end()) {
      std::fprintf(stderr, "unknown child role '%s'\n", role.c_str());
      return 2;
    }
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    return it->second(std::vector<std::string>(argv + 2, argv + argc));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace farm::testing
