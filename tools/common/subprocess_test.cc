// Subprocess::WriteLine to a child that has exited: an error, not the death of this
// process by SIGPIPE (a test's node process that crashed must fail the test, not kill it).
#include "tools/common/subprocess.h"

#include <signal.h>

#include <string>

#include "gtest/gtest.h"

namespace farm {
namespace {

TEST(SubprocessTest, AWriteToAChildThatExitedIsAnError) {
  absl::StatusOr<Subprocess> child = Subprocess::Spawn({"/bin/true"});
  ASSERT_TRUE(child.ok()) << child.status();
  absl::StatusOr<int> code = child->Wait(absl::Seconds(10));
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(*code, 0);
  // Larger than a pipe's buffer: the write reaches the closed read end.
  const absl::Status s = child->WriteLine(std::string(1 << 20, 'x'));
  EXPECT_FALSE(s.ok());
  sigset_t pending;
  sigpending(&pending);
  EXPECT_NE(sigismember(&pending, SIGPIPE), 1);
}

}  // namespace
}  // namespace farm
