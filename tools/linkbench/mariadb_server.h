// MariadbServer: a private mariadbd for one benchmark run. Start() makes a fresh
// temporary directory, initialises a datadir in it with mariadb-install-db, and runs
// mariadbd as the current user (with --user=root when that is root, which mariadbd
// otherwise refuses) listening only on a unix socket in that directory, with the given
// innodb_flush_log_at_trx_commit (default 1: the log flushed at every commit, LinkBench's
// baseline; 2: written at commit and flushed once a second, which a mariadbd crash
// loses nothing of and a machine crash up to a second of), the given buffer pool and
// --skip-grant-tables (any user may connect).
//
// Lifetime: the destructor shuts the server down (SIGTERM, then SIGKILL after 30 s) and
// removes the directory. The child also dies with the thread that started it
// (PR_SET_PDEATHSIG), so call Start() from a thread that outlives the server.
// Not thread-safe; the accessors may be read from any thread.
#ifndef FARM_TOOLS_LINKBENCH_MARIADB_SERVER_H_
#define FARM_TOOLS_LINKBENCH_MARIADB_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace farm::linkbench {

struct MariadbServerOptions {
  std::string mariadbd = "/usr/sbin/mariadbd";
  std::string install_db = "/usr/bin/mariadb-install-db";
  std::string buffer_pool = "1G";
  int flush_log_at_trx_commit = 1;  // 0, 1 or 2 (InnoDB's meaning)
};

class MariadbServer {
 public:
  // NotFound (naming the Debian package mariadb-server) when a binary is missing;
  // Internal with the tail of the install log when the datadir cannot be made;
  // Unavailable with the tail of the server's error log when it exits or does not
  // accept connections within 60 s.
  static absl::StatusOr<std::unique_ptr<MariadbServer>> Start(const MariadbServerOptions& options);

  MariadbServer(const MariadbServer&) = delete;
  MariadbServer& operator=(const MariadbServer&) = delete;
  ~MariadbServer();

  const std::string& socket_path() const { return socket_; }
  const std::string& dir() const { return dir_; }
  const std::string& error_log() const { return error_log_; }

 private:
  explicit MariadbServer(std::string dir);
  void Stop();

  const std::string dir_;
  const std::string socket_;
  const std::string error_log_;
  pid_t pid_ = -1;
};

// The last `bytes` of a file (for error messages); empty when unreadable.
std::string FileTail(const std::string& path, size_t bytes = 2000);

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_MARIADB_SERVER_H_
