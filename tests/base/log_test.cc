// The log: levels filter lines (without formatting them), each line is whole with its
// time and level, and lines of concurrent threads never interleave.
#include "farm/base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

// Captures the log into a temporary file for the test's duration.
class LogCapture {
 public:
  LogCapture() {
    path_ = ::testing::TempDir() + "log_test_" + std::to_string(::getpid());
    fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    SetLogFd(fd_);
  }
  ~LogCapture() {
    SetLogFd(STDERR_FILENO);
    SetLogLevel(LogLevel::kInfo);
    ::close(fd_);
    ::unlink(path_.c_str());
  }
  std::vector<std::string> Lines() const {
    std::string all;
    char buf[65536];
    for (off_t off = 0;;) {
      const ssize_t n = ::pread(fd_, buf, sizeof(buf), off);
      if (n <= 0) break;
      all.append(buf, n);
      off += n;
    }
    std::vector<std::string> lines = absl::StrSplit(all, '\n');
    if (!lines.empty() && lines.back().empty()) lines.pop_back();
    return lines;
  }

 private:
  std::string path_;
  int fd_ = -1;
};

int formatted = 0;
int Counted() { return ++formatted; }

TEST(LogTest, LevelsFilterAndLinesCarryTimeAndLevel) {
  LogCapture capture;
  SetLogLevel(LogLevel::kInfo);
  formatted = 0;
  FARM_LOG(kDebug, "hidden %d", Counted());
  EXPECT_EQ(formatted, 0) << "a line below the level was formatted";
  FARM_LOG(kInfo, "node %u: serving in epoch %d", 3u, 7);
  FARM_LOG(kWarning, "retrying: %s", "UNAVAILABLE: no route");
  SetLogLevel(LogLevel::kError);
  FARM_LOG(kWarning, "hidden too");
  FARM_LOG(kError, "broken");
  SetLogLevel(LogLevel::kDebug);
  FARM_LOG(kDebug, "now shown\n");  // a trailing newline is not doubled
  const std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), 4u);
  const std::regex format(R"(^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} ([DIWE]) (.*)$)");
  const std::vector<std::pair<std::string, std::string>> want = {
      {"I", "node 3: serving in epoch 7"},
      {"W", "retrying: UNAVAILABLE: no route"},
      {"E", "broken"},
      {"D", "now shown"}};
  for (size_t i = 0; i < lines.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, format)) << lines[i];
    EXPECT_EQ(m[1], want[i].first);
    EXPECT_EQ(m[2], want[i].second);
  }
}

TEST(LogTest, LinesOfConcurrentThreadsNeverInterleave) {
  LogCapture capture;
  constexpr int kThreads = 4;
  constexpr int kLines = 2000;
  const std::string filler(300, 'x');  // long lines: more chance to tear if written in parts
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &filler] {
      for (int i = 0; i < kLines; ++i) FARM_LOG(kInfo, "thread %d line %d %s end", t, i, filler);
    });
  }
  for (std::thread& t : threads) t.join();
  const std::vector<std::string> lines = capture.Lines();
  ASSERT_EQ(lines.size(), size_t{kThreads * kLines});
  const std::regex whole(R"(^\S+ \S+ I thread \d line \d+ x{300} end$)");
  for (const std::string& line : lines) ASSERT_TRUE(std::regex_match(line, whole)) << line;
}

TEST(LogTest, LevelNames) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("warning"), LogLevel::kWarning);
  EXPECT_EQ(*ParseLogLevel("error"), LogLevel::kError);
  absl::StatusOr<LogLevel> bad = ParseLogLevel("verbose");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("debug, info, warning or error"), absl::string_view::npos);
}

}  // namespace
}  // namespace farm
