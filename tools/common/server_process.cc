#include "tools/common/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "farm/base/unique_fd.h"

namespace farm::bench {
namespace {

constexpr absl::Duration kStartTimeout = absl::Seconds(5);
constexpr absl::Duration kStopGrace = absl::Seconds(5);
constexpr absl::Duration kProbeTimeout = absl::Milliseconds(200);
// Start() retries on another port when the one picked was taken before the server bound
// it (another process won the race between our close() and its bind()).
constexpr int kPortAttempts = 5;
constexpr size_t kLogTailBytes = 2048;

absl::StatusOr<std::string> MakeTempDir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string path =
      absl::StrCat((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp", "/", prefix, "-XXXXXX");
  if (::mkdtemp(path.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("mkdtemp ", path));
  }
  return path;
}

// A port that was free a moment ago: bind port 0 on loopback, read it back, close.
absl::StatusOr<uint16_t> PickFreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return absl::ErrnoToStatus(errno, "socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return absl::ErrnoToStatus(errno, "bind 127.0.0.1:0");
  }
  socklen_t len = sizeof(addr);
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::ErrnoToStatus(errno, "getsockname");
  }
  return ntohs(addr.sin_port);
}

// fork + exec of argv[0] with stdin from /dev/null and stdout and stderr appended to
// `output_path`, so that what the server prints before its own logging starts (a bad
// option, say) lands in the log too.
absl::StatusOr<pid_t> SpawnWithOutputTo(const std::vector<std::string>& argv_in,
                                        const std::string& output_path) {
  UniqueFd null_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!null_fd.valid()) return absl::ErrnoToStatus(errno, "open /dev/null");
  UniqueFd out_fd(::open(output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  if (!out_fd.valid()) return absl::ErrnoToStatus(errno, absl::StrCat("open ", output_path));
  // Everything the child needs is prepared before fork: after it, only exec-safe calls.
  std::vector<std::string> argv_strings = argv_in;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  static constexpr char kExecFailed[] = "farm: exec of the server failed\n";
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::ErrnoToStatus(errno, "fork");
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    // dup2 clears close-on-exec on the copies.
    ::dup2(null_fd.get(), STDIN_FILENO);
    ::dup2(out_fd.get(), STDOUT_FILENO);
    ::dup2(out_fd.get(), STDERR_FILENO);
    ::execv(argv[0], argv.data());
    [[maybe_unused]] ssize_t ignored = ::write(STDERR_FILENO, kExecFailed, sizeof(kExecFailed) - 1);
    ::_exit(127);
  }
  return pid;
}

std::string DescribeExit(int status) {
  if (WIFSIGNALED(status)) return absl::StrCat("was killed by signal ", WTERMSIG(status));
  return absl::StrCat("exited with code ", WEXITSTATUS(status));
}

}  // namespace

ServerProcess::ServerProcess(ServerLaunchSpec spec, std::string dir)
    : spec_(std::move(spec)), dir_(std::move(dir)), log_path_(dir_ + "/" + spec_.log_name) {}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(ServerLaunchSpec spec,
                                                                    const std::string& package) {
  if (::access(spec.binary.c_str(), X_OK) != 0) {
    return absl::NotFoundError(absl::StrCat(
        spec.name, " binary ", spec.binary, " is missing or not executable (", std::strerror(errno),
        "); on Debian: apt-get install ", package, ", or run deploy/install-deps.sh"));
  }
  absl::StatusOr<std::string> dir = MakeTempDir(spec.dir_prefix);
  if (!dir.ok()) return dir.status();
  // Owned from here on: any failure below removes the directory.
  std::unique_ptr<ServerProcess> server(new ServerProcess(std::move(spec), *std::move(dir)));
  absl::Status last;
  for (int attempt = 0; attempt < kPortAttempts; ++attempt) {
    absl::StatusOr<uint16_t> port = PickFreePort();
    if (!port.ok()) return port.status();
    last = server->Launch(*port);
    if (last.ok()) return server;
    if (!absl::StrContains(last.message(), "Address already in use")) break;
  }
  return last;
}

absl::Status ServerProcess::Launch(uint16_t port) {
  ::unlink(log_path_.c_str());  // each attempt's log on its own
  port_ = port;
  absl::StatusOr<pid_t> pid = SpawnWithOutputTo(spec_.argv(port, dir_, log_path_), log_path_);
  if (!pid.ok()) return pid.status();
  pid_ = *pid;
  absl::Status ready = WaitUntilReady(kStartTimeout);
  if (ready.ok()) return ready;
  Stop(absl::Milliseconds(500));
  return absl::UnavailableError(absl::StrCat(spec_.binary, " on 127.0.0.1:", port,
                                             " did not come up: ", ready.message(),
                                             "; its log ended with:\n", LogTail()));
}

absl::Status ServerProcess::WaitUntilReady(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    int status = 0;
    const pid_t rc = ::waitpid(pid_, &status, WNOHANG);
    if (rc == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("it ", DescribeExit(status)));
    }
    if (rc < 0 && errno != EINTR) return absl::ErrnoToStatus(errno, "waitpid");
    if (spec_.ready(port_, kProbeTimeout)) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::UnavailableError(
          absl::StrCat("no ", spec_.ready_what, " within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
}

void ServerProcess::Stop(absl::Duration grace) {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  const absl::Time deadline = absl::Now() + grace;
  for (;;) {
    const pid_t rc = ::waitpid(pid_, nullptr, WNOHANG);
    if (rc == pid_ || (rc < 0 && errno != EINTR)) break;
    if (absl::Now() > deadline) {
      ::kill(pid_, SIGKILL);
      while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  pid_ = -1;
}

std::string ServerProcess::LogTail() const {
  UniqueFd fd(::open(log_path_.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return absl::StrCat("(cannot open it: ", std::strerror(errno), ")");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return "(cannot stat it)";
  const off_t from = st.st_size > static_cast<off_t>(kLogTailBytes)
                         ? st.st_size - static_cast<off_t>(kLogTailBytes)
                         : 0;
  std::string tail(static_cast<size_t>(st.st_size - from), '\0');
  const ssize_t n = ::pread(fd.get(), tail.data(), tail.size(), from);
  tail.resize(n > 0 ? static_cast<size_t>(n) : 0);
  if (from > 0) {
    // Start at a whole line.
    if (const size_t nl = tail.find('\n'); nl != std::string::npos) tail.erase(0, nl + 1);
  }
  absl::StripTrailingAsciiWhitespace(&tail);
  return tail.empty() ? "(empty)" : tail;
}

ServerProcess::~ServerProcess() {
  Stop(kStopGrace);
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

}  // namespace farm::bench
