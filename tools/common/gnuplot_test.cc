// RunGnuplot against stand-ins for gnuplot: one that reads its script, one that exits
// before reading it (a write into a pipe nobody reads: EPIPE, and a SIGPIPE that must
// not kill the process), one that fails, and none at all. The script is larger than a
// pipe's buffer, so the write is still going on when the reader has gone.
#include "tools/common/gnuplot.h"

#include <signal.h>

#include <string>

#include "gtest/gtest.h"

namespace farm::tools {
namespace {

const std::string& BigScript() {
  static const std::string script(1 << 20, '#');
  return script;
}

bool SigpipePending() {
  sigset_t pending;
  sigpending(&pending);
  return sigismember(&pending, SIGPIPE) == 1;
}

TEST(GnuplotTest, AReaderThatTakesTheWholeScriptSucceeds) {
  EXPECT_TRUE(RunGnuplot(BigScript(), "out.png", "cat > /dev/null").ok());
}

TEST(GnuplotTest, AReaderThatExitsFirstIsAnErrorNotASigpipe) {
  for (int i = 0; i < 20; ++i) {
    const absl::Status s = RunGnuplot(BigScript(), "out.png", "true");
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_NE(s.message().find("before it read its script"), std::string::npos) << s;
  }
  EXPECT_FALSE(SigpipePending());
}

TEST(GnuplotTest, AFailingGnuplotReportsItsExitStatus) {
  const absl::Status s = RunGnuplot(BigScript(), "out.png", "false");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
  EXPECT_NE(s.message().find("exit status 1"), std::string::npos) << s;
}

TEST(GnuplotTest, AMissingGnuplotIsNotFound) {
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(RunGnuplot(BigScript(), "out.png", "/nonexistent/gnuplot").code(), absl::StatusCode::kNotFound);
  }
  EXPECT_FALSE(SigpipePending());
}

}  // namespace
}  // namespace farm::tools
