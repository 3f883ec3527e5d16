#include "tools/common/memcached_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "farm/base/unique_fd.h"

namespace farm::bench {
namespace {

// True when a text-protocol "version" on 127.0.0.1:port gets a "VERSION ..." line back
// within `timeout` (per step).
bool AnswersVersion(uint16_t port, absl::Duration timeout) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  const timeval tv = absl::ToTimeval(timeout);
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return false;
  static constexpr char kVersion[] = "version\r\n";
  if (::send(fd.get(), kVersion, sizeof(kVersion) - 1, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(sizeof(kVersion) - 1)) {
    return false;
  }
  std::string reply;
  char buf[128];
  while (!absl::StrContains(reply, "\r\n")) {
    const ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    reply.append(buf, static_cast<size_t>(n));
  }
  return absl::StartsWith(reply, "VERSION ");
}

}  // namespace

absl::StatusOr<std::unique_ptr<MemcachedServer>> MemcachedServer::Start(
    const MemcachedServerOptions& options) {
  if (options.threads < 1 || options.memory_mb < 1 || options.max_connections < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memcached needs at least 1 thread, 1 MiB and 1 connection; got threads=", options.threads,
        " memory_mb=", options.memory_mb, " max_connections=", options.max_connections));
  }
  ServerLaunchSpec spec;
  spec.name = "memcached";
  spec.binary = options.binary;
  spec.dir_prefix = "farm-memcached";
  spec.log_name = "memcached.log";
  spec.argv = [options](uint16_t port, const std::string&, const std::string&) {
    // Option, value pairs.
    // clang-format off
    std::vector<std::string> argv = {
        options.binary,
        "-l", "127.0.0.1",
        "-p", absl::StrCat(port),
        "-U", "0",
        "-t", absl::StrCat(options.threads),
        "-m", absl::StrCat(options.memory_mb),
        "-c", absl::StrCat(options.max_connections),
        "-M",
    };
    // clang-format on
    // memcached refuses to run as root unless told which user to be.
    if (::geteuid() == 0) {
      argv.push_back("-u");
      argv.push_back("root");
    }
    return argv;
  };
  spec.ready = AnswersVersion;
  spec.ready_what = "VERSION answer to \"version\"";
  absl::StatusOr<std::unique_ptr<ServerProcess>> process =
      ServerProcess::Start(std::move(spec), "memcached");
  if (!process.ok()) return process.status();
  return std::unique_ptr<MemcachedServer>(new MemcachedServer(*std::move(process)));
}

}  // namespace farm::bench
