// A differential test: the same random command sequences go to a real redis-server
// (started here on a unix socket in a private directory) and to a RespSession over the
// FakeStore; every reply must be byte for byte the same. Strings, hashes, WRONGTYPE
// both ways, 0xFF-prefixed values, argument errors, MULTI/EXEC/DISCARD and WATCH on one
// connection.
//
// redis-server runs with hash-max-listpack-entries/-value raised so that its hashes
// keep insertion order, as ours do (Redis promises no order; its listpack encoding
// happens to keep it, and HGETALL is then comparable).
//
// Skipped when /usr/bin/redis-server is not installed (Debian package redis-server).
// FARM_DIFF_SEED=<n> replays one sequence; FARM_DIFF_COMMANDS sets its length.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "farm/base/unique_fd.h"
#include "gtest/gtest.h"
#include "kv/resp/resp_session.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::DecodeReplies;
using ::farm::kv::testing::Multibulk;
using ::farm::kv::testing::SessionEnv;
using Rng = std::mt19937_64;
using Words = std::vector<std::string>;

constexpr char kRedisServer[] = "/usr/bin/redis-server";

int64_t EnvInt(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  int64_t n = 0;
  return v != nullptr && absl::SimpleAtoi(v, &n) ? n : fallback;
}

// A redis-server child process on a unix socket in a fresh temporary directory; killed
// (by its pid) and its directory removed when this is destroyed.
class RedisServer {
 public:
  RedisServer() {
    char dir_template[] = "/tmp/farm-redis-diff-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) return;
    dir_ = dir_template;
    socket_ = dir_ + "/redis.sock";
    const std::vector<std::string> argv = {kRedisServer,
                                           "--port",
                                           "0",
                                           "--unixsocket",
                                           socket_,
                                           "--dir",
                                           dir_,
                                           "--save",
                                           "",
                                           "--appendonly",
                                           "no",
                                           "--hash-max-listpack-entries",
                                           "1000000",
                                           "--hash-max-listpack-value",
                                           "1000000",
                                           "--logfile",
                                           dir_ + "/redis.log"};
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::execv(args[0], args.data());
      ::_exit(127);
    }
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (pid_ > 0 && absl::Now() < deadline) {
      UniqueFd fd = Connect();
      if (fd.valid()) return;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  ~RedisServer() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
    if (!dir_.empty()) {
      ::unlink(socket_.c_str());
      ::unlink((dir_ + "/redis.log").c_str());
      ::rmdir(dir_.c_str());
    }
  }

  UniqueFd Connect() const {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (socket_.size() >= sizeof(addr.sun_path)) return UniqueFd();
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_.c_str());
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      return UniqueFd();
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
  }

 private:
  std::string dir_;
  std::string socket_;
  pid_t pid_ = -1;
};

// One blocking connection; Call sends a command and returns its reply's raw bytes.
class RedisConnection {
 public:
  explicit RedisConnection(UniqueFd fd) : fd_(std::move(fd)) {}
  bool ok() const { return fd_.valid(); }
  std::string Call(const Words& words) {
    const std::string request = Multibulk(words);
    if (::send(fd_.get(), request.data(), request.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(request.size())) {
      return "(send failed)";
    }
    for (;;) {
      const auto decoded = DecodeReplies(buffer_);
      if (decoded.malformed) return "(malformed reply)";
      // One command in flight: the buffer holds its reply and nothing else.
      if (!decoded.replies.empty()) {
        if (decoded.replies.size() != 1 || decoded.consumed != buffer_.size()) {
          return "(more than one reply)";
        }
        return std::exchange(buffer_, std::string());
      }
      char chunk[65536];
      const ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
      if (n <= 0) return "(no reply)";
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  UniqueFd fd_;
  std::string buffer_;
};

size_t Uniform(Rng& rng, size_t lo, size_t hi) {
  return std::uniform_int_distribution<size_t>(lo, hi)(rng);
}

std::string Pick(Rng& rng, std::initializer_list<const char*> options) {
  return *(options.begin() + Uniform(rng, 0, options.size() - 1));
}

std::string Key(Rng& rng) { return Pick(rng, {"h", "h2", "s", "n", "x"}); }
std::string Field(Rng& rng) { return Pick(rng, {"a", "b", "c", "n", "", "\xFF"}); }
std::string Value(Rng& rng) {
  switch (Uniform(rng, 0, 6)) {
    case 0:
      return absl::StrCat(static_cast<int64_t>(Uniform(rng, 0, 200)) - 100);
    case 1:
      return Pick(rng, {"9223372036854775807", "-9223372036854775808", "-0", "01", " 1", ""});
    case 2:
      return Pick(rng, {"\xFF", "\xFF\xFF",
                        "\xFFH\x01\x01\x01"
                        "a\x01"
                        "b",
                        "\xFFZ"});
    case 3:
      return std::string(Uniform(rng, 0, 80), static_cast<char>('a' + Uniform(rng, 0, 25)));
    default:
      return Pick(rng, {"v", "w", "1", "x y", "3"});
  }
}
std::string Increment(Rng& rng) {
  return Pick(rng, {"1", "-1", "5", "x", "9223372036854775807", "-9223372036854775808", "0", "01",
                    "9223372036854775808"});
}

Words RandomCommand(Rng& rng) {
  const std::string k = Key(rng);
  switch (Uniform(rng, 0, 32)) {
    case 0:
    case 1: {
      Words w = {"HSET", k};
      for (size_t i = Uniform(rng, 1, 3); i > 0; --i) {
        w.push_back(Field(rng));
        w.push_back(Value(rng));
      }
      if (Uniform(rng, 0, 15) == 0) w.pop_back();  // an odd count
      return w;
    }
    case 2: {
      Words w = {"HMSET", k, Field(rng), Value(rng)};
      if (Uniform(rng, 0, 3) == 0) w.push_back(Field(rng));
      return w;
    }
    case 3:
    case 4:
      return {"HGET", k, Field(rng)};
    case 5:
      return {"HMGET", k, Field(rng), Field(rng)};
    case 6:
    case 7:
      return {"HGETALL", k};
    case 8:
      return {"HDEL", k, Field(rng), Field(rng)};
    case 9:
      return {"HDEL", k, Field(rng)};
    case 10:
      return {"HLEN", k};
    case 11:
      return {"HEXISTS", k, Field(rng)};
    case 12:
    case 13:
      return {"HINCRBY", k, Field(rng), Increment(rng)};
    case 14:
      return {"GET", k};
    case 15:
      return {"SET", k, Value(rng)};
    case 16:
      return {"SET", k, Value(rng), Pick(rng, {"NX", "XX", "GET"})};
    case 17:
      return {"DEL", k};
    case 18:
      return {"EXISTS", k, Key(rng)};
    case 19:
      return {"MGET", k, Key(rng)};
    case 20:
      return {"MSET", k, Value(rng), Key(rng), Value(rng)};
    case 21:
      return {"INCR", k};
    case 22:
      return {Pick(rng, {"INCRBY", "DECRBY"}), k, Increment(rng)};
    case 23:
      return {"TYPE", k};
    case 24:
      return {"MULTI"};
    case 25:
      return {"EXEC"};
    case 26:
      return {"DISCARD"};
    case 27:
      return {"WATCH", k};
    case 28:
      return {"UNWATCH"};
    case 29:
      return {"DBSIZE"};  // not inside MULTI: see the test
    case 30: {            // too few words
      static const char* const kNames[] = {"HSET", "HMSET", "HGET",    "HMGET",   "HGETALL",
                                           "HDEL", "HLEN",  "HEXISTS", "HINCRBY", "TYPE"};
      return {kNames[Uniform(rng, 0, 9)]};
    }
    case 31:
      return {"HINCRBY", k, Field(rng), Increment(rng), "extra"};
    default:
      return {"DEL", k, Key(rng)};
  }
}

std::string Printable(const std::string& s) { return absl::CHexEscape(s); }

TEST(RespRedisDiffTest, SameRepliesAsRedisServer) {
  if (::access(kRedisServer, X_OK) != 0) {
    GTEST_SKIP() << kRedisServer << " is not installed (Debian package redis-server)";
  }
  RedisServer server;
  RedisConnection redis(server.Connect());
  ASSERT_TRUE(redis.ok()) << "redis-server did not start";

  const int64_t commands = EnvInt("FARM_DIFF_COMMANDS", 3000);
  std::vector<uint64_t> seeds = {1, 2, 3, 4};
  if (const int64_t seed = EnvInt("FARM_DIFF_SEED", -1); seed >= 0)
    seeds = {static_cast<uint64_t>(seed)};
  for (uint64_t seed : seeds) {
    SCOPED_TRACE(absl::StrCat("seed ", seed, " (replay: FARM_DIFF_SEED=", seed, ")"));
    ASSERT_EQ(redis.Call({"FLUSHALL"}), "+OK\r\n");
    SessionEnv env;
    auto session = env.NewSession();
    Rng rng(seed);
    std::vector<std::string> history;
    bool in_multi = false;
    for (int64_t i = 0; i < commands; ++i) {
      Words words = RandomCommand(rng);
      // Known difference: DBSIZE inside EXEC counts the store, not the transaction's
      // own writes before it (Redis counts them).
      if (in_multi && words[0] == "DBSIZE") words = {"PING"};
      if (words[0] == "MULTI") in_multi = true;
      if (words[0] == "EXEC" || words[0] == "DISCARD") in_multi = false;
      history.push_back(Printable(absl::StrJoin(words, " ")));
      const std::string expected = redis.Call(words);
      session->Feed(Multibulk(words));
      ASSERT_TRUE(env.Drain());
      const std::string got(session->output());
      session->ConsumeOutput(got.size());
      if (got != expected) {
        const size_t from = history.size() > 15 ? history.size() - 15 : 0;
        FAIL() << "command " << i << ": " << history.back() << "\n  redis: " << Printable(expected)
               << "\n  ours:  " << Printable(got) << "\nthe commands before it:\n  "
               << absl::StrJoin(history.begin() + from, history.end(), "\n  ");
      }
    }
    // End any transaction the sequence left open, on both.
    redis.Call({"DISCARD"});
    redis.Call({"UNWATCH"});
  }
}

}  // namespace
}  // namespace farm::kv::resp
