#include "tools/ycsb/redis_backend.h"

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <initializer_list>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace farm::ycsb {
namespace {

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

absl::string_view Text(const redisReply& r) { return absl::string_view(r.str, r.len); }

class RedisClient final : public SyncKvClient {
 public:
  explicit RedisClient(redisContext* c) : c_(c) {}
  ~RedisClient() override { redisFree(c_); }
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  absl::Status Get(absl::string_view key, std::string* value) override {
    absl::StatusOr<Reply> r = Command({"GET", key});
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_NIL) return absl::NotFoundError(key);
    if ((*r)->type != REDIS_REPLY_STRING) return Unexpected("GET", **r);
    value->assign((*r)->str, (*r)->len);
    return absl::OkStatus();
  }

  absl::Status Insert(absl::string_view key, absl::string_view value) override {
    absl::StatusOr<Reply> r = Command({"SET", key, value, "NX"});
    if (!r.ok()) return r.status();
    if ((*r)->type == REDIS_REPLY_NIL) return absl::AlreadyExistsError(key);
    return IsOk(**r) ? absl::OkStatus() : Unexpected("SET NX", **r);
  }

  absl::Status Update(absl::string_view key, absl::string_view value) override {
    absl::StatusOr<Reply> r = Command({"SET", key, value});
    if (!r.ok()) return r.status();
    return IsOk(**r) ? absl::OkStatus() : Unexpected("SET", **r);
  }

  absl::StatusOr<size_t> MultiGet(
      const KeyBatch& keys, absl::FunctionRef<void(size_t, absl::string_view)> found) override {
    if (keys.size() == 0) return 0;
    argv_.assign(1, "MGET");
    argvlen_.assign(1, 4);
    argv_.insert(argv_.end(), keys.pointers(), keys.pointers() + keys.size());
    argvlen_.insert(argvlen_.end(), keys.lengths(), keys.lengths() + keys.size());
    absl::StatusOr<Reply> r = Send();
    if (!r.ok()) return r.status();
    const redisReply& reply = **r;
    if (reply.type != REDIS_REPLY_ARRAY || reply.elements != keys.size()) {
      return Unexpected("MGET", reply);
    }
    size_t count = 0;
    for (size_t i = 0; i < reply.elements; ++i) {
      const redisReply& e = *reply.element[i];
      if (e.type == REDIS_REPLY_NIL) continue;
      if (e.type != REDIS_REPLY_STRING) return Unexpected("MGET element", e);
      found(i, Text(e));
      ++count;
    }
    return count;
  }

  absl::StatusOr<ServerStats> Stats() override {
    ServerStats s;
    absl::StatusOr<Reply> size = Command({"DBSIZE"});
    if (!size.ok()) return size.status();
    if ((*size)->type != REDIS_REPLY_INTEGER) return Unexpected("DBSIZE", **size);
    s.items = static_cast<uint64_t>((*size)->integer);
    absl::StatusOr<Reply> info = Command({"INFO", "memory"});
    if (!info.ok()) return info.status();
    if ((*info)->type != REDIS_REPLY_STRING) return Unexpected("INFO", **info);
    for (absl::string_view line : absl::StrSplit(Text(**info), "\r\n")) {
      if (absl::ConsumePrefix(&line, "used_memory:") && absl::SimpleAtoi(line, &s.memory_bytes)) {
        return s;
      }
    }
    return absl::InternalError("INFO memory has no used_memory");
  }

 private:
  static bool IsOk(const redisReply& r) { return r.type == REDIS_REPLY_STATUS && Text(r) == "OK"; }

  absl::StatusOr<Reply> Command(std::initializer_list<absl::string_view> args) {
    argv_.clear();
    argvlen_.clear();
    for (absl::string_view a : args) {
      argv_.push_back(a.data());
      argvlen_.push_back(a.size());
    }
    return Send();
  }

  absl::StatusOr<Reply> Send() {
    Reply r(static_cast<redisReply*>(
        redisCommandArgv(c_, static_cast<int>(argv_.size()), argv_.data(), argvlen_.data())));
    if (r == nullptr) {
      return absl::UnavailableError(absl::StrCat("redis: ", c_->errstr));
    }
    return r;
  }

  static absl::Status Unexpected(absl::string_view what, const redisReply& r) {
    if (r.type == REDIS_REPLY_ERROR) {
      return absl::InternalError(absl::StrCat("redis ", what, ": ", Text(r)));
    }
    return absl::InternalError(absl::StrCat("redis ", what, ": unexpected reply of type ", r.type));
  }

  redisContext* c_;
  // The current command's arguments; capacity kept across commands.
  std::vector<const char*> argv_;
  std::vector<size_t> argvlen_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SyncKvClient>> ConnectRedis(const RedisClientOptions& options) {
  const timeval tv = absl::ToTimeval(options.timeout);
  redisContext* c = redisConnectWithTimeout(options.host.c_str(), options.port, tv);
  if (c == nullptr) return absl::ResourceExhaustedError("redisConnect: out of memory");
  if (c->err != 0) {
    const std::string message = c->errstr;
    redisFree(c);
    return absl::UnavailableError(
        absl::StrCat("redis at ", options.host, ":", options.port, ": ", message));
  }
  const int one = 1;
  if (redisSetTimeout(c, tv) != REDIS_OK ||
      ::setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) != 0) {
    redisFree(c);
    return absl::InternalError("redis: cannot set the socket's timeout or TCP_NODELAY");
  }
  auto client = std::make_unique<RedisClient>(c);
  absl::StatusOr<ServerStats> stats = client->Stats();  // also proves the server answers
  if (!stats.ok()) return stats.status();
  return client;
}

}  // namespace farm::ycsb
