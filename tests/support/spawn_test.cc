// SanitizerReportIn finds the first sanitizer report in a child's log, and nothing in a
// log without one.
#include "tests/support/spawn.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace farm::testing {
namespace {

class SanitizerReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char path[] = "/tmp/farm-spawn-test-XXXXXX";
    const int fd = ::mkstemp(path);
    ASSERT_GE(fd, 0);
    ::close(fd);
    path_ = path;
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  void Write(const std::string& text) { std::ofstream(path_) << text; }
  std::string path_;
};

TEST_F(SanitizerReportTest, ALogWithoutOneHasNone) {
  Write("2026-12-03 I node 1: ready\n2026-12-03 W node 1: peer 2 vanished\n");
  EXPECT_EQ(SanitizerReportIn(path_), "");
}

TEST_F(SanitizerReportTest, AMissingLogHasNone) { EXPECT_EQ(SanitizerReportIn(path_ + ".absent"), ""); }

TEST_F(SanitizerReportTest, FindsTheFirstReportOfAnyKind) {
  Write("I node 1: ready\n==7==WARNING: ThreadSanitizer: data race (pid=7)\n  Write of size 8\n"
        "==7==ERROR: AddressSanitizer: heap-use-after-free\n");
  const std::string report = SanitizerReportIn(path_);
  EXPECT_EQ(report.rfind("WARNING: ThreadSanitizer: data race", 0), 0u) << report;
  EXPECT_NE(report.find("AddressSanitizer"), std::string::npos);

  Write("I node 1: ready\nfarm/x.cc:3:5: runtime error: signed integer overflow\n");
  EXPECT_EQ(SanitizerReportIn(path_, 13), "runtime error");

  Write("I ready\n==9==ERROR: AddressSanitizer: stack-buffer-overflow\n");
  EXPECT_EQ(SanitizerReportIn(path_).rfind("ERROR: AddressSanitizer", 0), 0u);
}

}  // namespace
}  // namespace farm::testing
