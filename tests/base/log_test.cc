// The log: levels filter lines (without formatting them), each line is whole with its
// time and level, and lines of concurrent threads never interleave.
#include "farm/base/log.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
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

// "YYYY-MM-DD HH:MM:SS.uuuuuu L message": the level letter and the message, or false.
bool ParseLine(absl::string_view line, char* level, std::string* message) {
  constexpr absl::string_view kShape = "dddd-dd-dd dd:dd:dd.dddddd L ";
  if (line.size() < kShape.size()) return false;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const char want = kShape[i];
    if (want == 'd' && !absl::ascii_isdigit(line[i])) return false;
    if (want != 'd' && want != 'L' && line[i] != want) return false;
  }
  *level = line[27];
  *message = std::string(line.substr(kShape.size()));
  return true;
}

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
  const std::vector<std::pair<char, std::string>> want = {
      {'I', "node 3: serving in epoch 7"},
      {'W', "retrying: UNAVAILABLE: no route"},
      {'E', "broken"},
      {'D', "now shown"}};
  for (size_t i = 0; i < lines.size(); ++i) {
    char level = 0;
    std::string message;
    ASSERT_TRUE(ParseLine(lines[i], &level, &message)) << lines[i];
    EXPECT_EQ(level, want[i].first);
    EXPECT_EQ(message, want[i].second);
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
  for (const std::string& line : lines) {
    char level = 0;
    std::string message;
    ASSERT_TRUE(ParseLine(line, &level, &message)) << line;
    ASSERT_EQ(level, 'I');
    std::vector<std::string> words = absl::StrSplit(message, ' ');
    ASSERT_EQ(words.size(), 6u) << line;
    EXPECT_EQ(words[0], "thread");
    EXPECT_EQ(words[4], filler);
    EXPECT_EQ(words[5], "end");
  }
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
