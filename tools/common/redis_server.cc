#include "tools/common/redis_server.h"

#include <hiredis/hiredis.h>

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace farm::bench {
namespace {

bool PingAnswersPong(uint16_t port, absl::Duration timeout) {
  const timeval tv = absl::ToTimeval(timeout);
  redisContext* c = redisConnectWithTimeout("127.0.0.1", port, tv);
  if (c == nullptr) return false;
  bool pong = false;
  if (c->err == 0 && redisSetTimeout(c, tv) == REDIS_OK) {
    auto* reply = static_cast<redisReply*>(redisCommand(c, "PING"));
    pong = reply != nullptr && reply->type == REDIS_REPLY_STATUS &&
           absl::string_view(reply->str, reply->len) == "PONG";
    if (reply != nullptr) freeReplyObject(reply);
  }
  redisFree(c);
  return pong;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(const std::string& binary,
                                                                const std::string& appendfsync) {
  ServerLaunchSpec spec;
  spec.name = "redis-server";
  spec.binary = binary;
  spec.dir_prefix = "farm-redis";
  spec.log_name = "redis.log";
  spec.argv = [binary, appendfsync](uint16_t port, const std::string& dir, const std::string& log_path) {
    // Option, value pairs.
    // clang-format off
    std::vector<std::string> argv{
        binary,
        "--port", absl::StrCat(port),
        "--bind", "127.0.0.1",
        "--protected-mode", "no",
        "--daemonize", "no",
        "--save", "",
        "--appendonly", appendfsync.empty() ? "no" : "yes",
        "--dir", dir,
        "--logfile", log_path,
    };
    // clang-format on
    if (!appendfsync.empty()) {
      argv.push_back("--appendfsync");
      argv.push_back(appendfsync);
    }
    return argv;
  };
  spec.ready = PingAnswersPong;
  spec.ready_what = "PONG to PING";
  absl::StatusOr<std::unique_ptr<ServerProcess>> process =
      ServerProcess::Start(std::move(spec), "redis-server");
  if (!process.ok()) return process.status();
  return std::unique_ptr<RedisServer>(new RedisServer(*std::move(process)));
}

}  // namespace farm::bench
