#include "tools/linkbench/mariadb_server.h"

#include <fcntl.h>
#include <mysql.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace farm::linkbench {
namespace {

// Forks and execs argv with stdout and stderr appended to `log`; the child dies with
// this thread. -1 on failure.
pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(127);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    dup2(fd, 1);
    dup2(fd, 2);
    close(fd);
  }
  execv(args[0], args.data());
  _exit(127);
}

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// Waits up to `timeout` for pid to exit; its status, or -1 if still running.
int WaitFor(pid_t pid, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return 0;
    if (std::chrono::steady_clock::now() >= deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

std::string FileTail(const std::string& path, size_t bytes) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream s;
  s << in.rdbuf();
  std::string text = s.str();
  return text.size() > bytes ? text.substr(text.size() - bytes) : text;
}

MariadbServer::MariadbServer(std::string dir)
    : dir_(std::move(dir)), socket_(dir_ + "/mariadbd.sock"), error_log_(dir_ + "/error.log") {}

absl::StatusOr<std::unique_ptr<MariadbServer>> MariadbServer::Start(const MariadbServerOptions& options) {
  if (options.flush_log_at_trx_commit < 0 || options.flush_log_at_trx_commit > 2) {
    return absl::InvalidArgumentError(absl::StrCat("innodb_flush_log_at_trx_commit is 0, 1 or 2, not ",
                                                   options.flush_log_at_trx_commit));
  }
  for (const std::string& bin : {options.mariadbd, options.install_db}) {
    if (!Executable(bin)) {
      return absl::NotFoundError(absl::StrCat(
          bin, " is missing or not executable: install the Debian package mariadb-server "
               "(or point the mariadb backend at a running server with --mysql_host/--mysql_socket)"));
    }
  }
  char tmpl[] = "/tmp/farm-linkbench-mariadb-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return absl::InternalError("mkdtemp failed for the MariaDB datadir");
  std::unique_ptr<MariadbServer> server(new MariadbServer(tmpl));
  const std::string datadir = server->dir_ + "/data";
  const bool root = geteuid() == 0;
  const std::string user = root ? "root" : (getenv("USER") ? getenv("USER") : "");

  // 1. The datadir.
  const std::string install_log = server->dir_ + "/install.log";
  std::vector<std::string> install = {options.install_db, "--no-defaults", "--datadir=" + datadir,
                                      "--auth-root-authentication-method=normal", "--skip-test-db"};
  if (!user.empty()) install.push_back("--user=" + user);
  const pid_t installer = SpawnLogged(install, install_log);
  if (installer < 0) return absl::InternalError("fork failed for mariadb-install-db");
  const int status = WaitFor(installer, std::chrono::minutes(2));
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    if (status == -1) kill(installer, SIGKILL), waitpid(installer, nullptr, 0);
    return absl::InternalError(absl::StrCat("mariadb-install-db failed for ", datadir, "; its log:\n",
                                            FileTail(install_log)));
  }

  // 2. The server.
  std::vector<std::string> argv = {options.mariadbd,
                                   "--no-defaults",
                                   "--datadir=" + datadir,
                                   "--socket=" + server->socket_,
                                   "--skip-networking",
                                   "--pid-file=" + server->dir_ + "/mariadbd.pid",
                                   "--log-error=" + server->error_log_,
                                   "--skip-grant-tables",
                                   "--innodb-buffer-pool-size=" + options.buffer_pool,
                                   absl::StrCat("--innodb-flush-log-at-trx-commit=", options.flush_log_at_trx_commit),
                                   "--max-connections=1000",
                                   "--skip-name-resolve"};
  if (root) argv.push_back("--user=root");
  server->pid_ = SpawnLogged(argv, server->dir_ + "/stdout.log");
  if (server->pid_ < 0) return absl::InternalError("fork failed for mariadbd");

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    MYSQL* probe = mysql_init(nullptr);
    unsigned int timeout = 2;
    mysql_options(probe, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    const bool up = mysql_real_connect(probe, nullptr, "root", nullptr, nullptr, 0,
                                       server->socket_.c_str(), 0) != nullptr;
    mysql_close(probe);
    if (up) return server;
    if (WaitFor(server->pid_, std::chrono::milliseconds(0)) != -1) {
      server->pid_ = -1;
      return absl::UnavailableError(absl::StrCat("mariadbd exited during start-up; its error log (",
                                                 server->error_log_, "):\n", FileTail(server->error_log_)));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError(absl::StrCat("mariadbd did not accept connections within 60 s; its error log:\n",
                                                 FileTail(server->error_log_)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void MariadbServer::Stop() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);  // a clean shutdown
  if (WaitFor(pid_, std::chrono::seconds(30)) == -1) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_ = -1;
}

MariadbServer::~MariadbServer() {
  Stop();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace farm::linkbench
