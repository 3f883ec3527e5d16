// RespServer on two loop threads with FakeStores, driven by the real redis-cli and
// redis-benchmark and by raw sockets.
#include "kv/resp/kv_resp_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "farm/base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kv/resp/fake_store.h"
#include "tests/kv/resp/run_process.h"
#include "tests/kv/resp/session_env.h"
#include "tests/support/loop_threads.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::FakeCluster;
using ::farm::kv::testing::FakeStore;
using ::farm::kv::testing::Multibulk;
using ::farm::kv::testing::ProcessResult;
using ::farm::kv::testing::RunProcess;
using ::testing::HasSubstr;

constexpr char kRedisCli[] = "/usr/bin/redis-cli";
constexpr char kRedisBenchmark[] = "/usr/bin/redis-benchmark";

bool Executable(const char* path) { return ::access(path, X_OK) == 0; }

// A blocking client socket with a receive timeout.
class Client {
 public:
  explicit Client(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{.tv_sec = 5, .tv_usec = 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool connected() const { return connected_; }
  int fd() const { return fd_.get(); }
  bool Send(absl::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until `size` bytes arrived, the server closed, or the timeout.
  std::string Receive(size_t size) {
    std::string got;
    char buffer[65536];
    while (got.size() < size) {
      const size_t want = std::min(sizeof(buffer), size - got.size());
      const ssize_t n = ::recv(fd_.get(), buffer, want, 0);
      if (n <= 0) {
        // The server closed: a FIN, or a reset when it closed with bytes of ours unread.
        closed_ = n == 0 || errno == ECONNRESET;
        break;
      }
      got.append(buffer, static_cast<size_t>(n));
    }
    return got;
  }
  // Reads everything until the server closes (or the timeout); true if it closed.
  bool ReceiveUntilClosed(std::string* got) {
    *got += Receive(SIZE_MAX);
    return closed_;
  }
  void ShutdownWrite() { ::shutdown(fd_.get(), SHUT_WR); }
  void Close() { fd_.reset(); }

 private:
  UniqueFd fd_;
  bool connected_ = false;
  bool closed_ = false;
};

class RespServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer({}); }

  void StartServer(KvRespOptions options) {
    server_.reset();
    threads_.Stop();
    stores_.clear();
    ASSERT_TRUE(threads_
                    .Start(2, [this](size_t, EventLoop* loop) {
                      stores_.push_back(std::make_unique<FakeStore>(&cluster_, loop));
                    })
                    .ok());
    auto server = StartKvRespServer(
        threads_.contexts(), [this](size_t i) { return stores_[i].get(); }, options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    port_ = absl::StrCat(server_->port());
  }

  ProcessResult Cli(std::vector<std::string> args, const std::string& input = "") {
    std::vector<std::string> argv = {kRedisCli, "-p", port_};
    argv.insert(argv.end(), args.begin(), args.end());
    absl::StatusOr<ProcessResult> r = RunProcess(argv, input);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : ProcessResult{};
  }
  std::string CliOut(std::vector<std::string> args) {
    ProcessResult r = Cli(std::move(args));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // Destroyed in reverse: the server (stops on its loops), the loops (joined), then
  // the stores their pending work may name, the cluster.
  FakeCluster cluster_;
  std::vector<std::unique_ptr<FakeStore>> stores_;
  farm::testing::LoopThreads threads_;
  std::unique_ptr<::farm::resp::RespServer> server_;
  std::string port_;
};

TEST_F(RespServerTest, RedisCliCommands) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  EXPECT_EQ(CliOut({"PING"}), "PONG\n");
  EXPECT_EQ(CliOut({"SET", "k", "hello world"}), "OK\n");
  EXPECT_EQ(CliOut({"GET", "k"}), "hello world\n");
  EXPECT_EQ(CliOut({"GET", "missing"}), "\n");
  EXPECT_EQ(CliOut({"EXISTS", "k", "missing"}), "1\n");
  EXPECT_EQ(CliOut({"MSET", "a", "1", "b", "2"}), "OK\n");
  EXPECT_EQ(CliOut({"MGET", "a", "b", "c"}), "1\n2\n\n");
  EXPECT_EQ(CliOut({"INCR", "n"}), "1\n");
  EXPECT_EQ(CliOut({"INCRBY", "n", "41"}), "42\n");
  EXPECT_EQ(CliOut({"DBSIZE"}), "4\n");
  EXPECT_EQ(CliOut({"DEL", "k", "a", "missing"}), "2\n");
  EXPECT_EQ(CliOut({"DBSIZE"}), "2\n");
  EXPECT_EQ(CliOut({"FOO", "bar"}),
            "ERR unknown command 'FOO', with args beginning with: 'bar' \n\n");
  EXPECT_THAT(CliOut({"INFO", "keyspace"}), HasSubstr("db0:keys=2,expires=0,avg_ttl=0"));
  EXPECT_EQ(cluster_.Peek("n"), "42");
}

// The replies below are what redis-cli prints against redis-server 7.0 for the same
// commands (errors are followed by an empty line).
TEST_F(RespServerTest, RedisCliHashes) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  const std::string kWrongType =
      "WRONGTYPE Operation against a key holding the wrong kind of value\n\n";
  EXPECT_EQ(CliOut({"HSET", "user:1", "name", "Ada", "lang", "en"}), "2\n");
  EXPECT_EQ(CliOut({"HMSET", "user:1", "lang", "fr", "born", "1815"}), "OK\n");
  EXPECT_EQ(CliOut({"HGET", "user:1", "name"}), "Ada\n");
  EXPECT_EQ(CliOut({"HGET", "user:1", "nope"}), "\n");
  EXPECT_EQ(CliOut({"HMGET", "user:1", "lang", "nope", "born"}), "fr\n\n1815\n");
  EXPECT_EQ(CliOut({"HGETALL", "user:1"}), "name\nAda\nlang\nfr\nborn\n1815\n");
  EXPECT_EQ(CliOut({"HLEN", "user:1"}), "3\n");
  EXPECT_EQ(CliOut({"HEXISTS", "user:1", "born"}), "1\n");
  EXPECT_EQ(CliOut({"HINCRBY", "user:1", "born", "-15"}), "1800\n");
  EXPECT_EQ(CliOut({"HINCRBY", "user:1", "name", "1"}), "ERR hash value is not an integer\n\n");
  EXPECT_EQ(CliOut({"HINCRBY", "user:1", "born", "x"}),
            "ERR value is not an integer or out of range\n\n");
  EXPECT_EQ(CliOut({"HSET", "user:1", "name"}),
            "ERR wrong number of arguments for 'hset' command\n\n");
  EXPECT_EQ(CliOut({"TYPE", "user:1"}), "hash\n");
  EXPECT_EQ(CliOut({"GET", "user:1"}), kWrongType);
  EXPECT_EQ(CliOut({"INCR", "user:1"}), kWrongType);
  EXPECT_EQ(CliOut({"SET", "str", "v"}), "OK\n");
  EXPECT_EQ(CliOut({"HGET", "str", "f"}), kWrongType);
  EXPECT_EQ(CliOut({"HSET", "str", "f", "v"}), kWrongType);
  EXPECT_EQ(CliOut({"MGET", "str", "user:1"}), "v\n\n");
  EXPECT_EQ(CliOut({"HDEL", "user:1", "name", "lang", "nope"}), "2\n");
  EXPECT_EQ(CliOut({"HDEL", "user:1", "born"}), "1\n");
  EXPECT_EQ(CliOut({"EXISTS", "user:1"}), "0\n");
  EXPECT_EQ(CliOut({"HGETALL", "user:1"}), "\n");  // an empty array
  ProcessResult r = Cli({}, "MULTI\nHSET h a 1\nHINCRBY h a 2\nHGETALL h\nGET h\nEXEC\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "OK\nQUEUED\nQUEUED\nQUEUED\nQUEUED\n1\n3\na\n3\n" + kWrongType);
}

// redis-cli's own scan loop (--scan, --pattern: SCAN with MATCH until cursor 0), KEYS
// and FLUSHALL.
TEST_F(RespServerTest, RedisCliScanKeysAndFlush) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  std::vector<std::string> users;
  for (int i = 0; i < 200; ++i) {
    cluster_.Poke(absl::StrCat("user:", i), "v");
    users.push_back(absl::StrCat("user:", i));
  }
  cluster_.Poke("other", "v");
  std::vector<std::string> scanned = absl::StrSplit(CliOut({"--scan", "--pattern", "user:*"}), '\n', absl::SkipEmpty());
  EXPECT_THAT(scanned, ::testing::UnorderedElementsAreArray(users));
  EXPECT_EQ(CliOut({"KEYS", "oth?r"}), "other\n");
  EXPECT_EQ(CliOut({"SCAN", "x"}), "ERR invalid cursor\n\n");
  EXPECT_EQ(CliOut({"FLUSHALL"}), "OK\n");
  EXPECT_EQ(CliOut({"DBSIZE"}), "0\n");
  EXPECT_EQ(CliOut({"--scan"}), "");
}

TEST_F(RespServerTest, RedisCliCommandsFromStdin) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  ProcessResult r = Cli({}, "SET x 1\nINCR x\nGET x\nFOO\nMULTI\nINCR x\nEXEC\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "OK\n2\n2\nERR unknown command 'FOO', with args beginning with: \n\nOK\nQUEUED\n3\n");
}

TEST_F(RespServerTest, RedisCliPipe) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  std::string input;
  for (int i = 0; i < 1000; ++i) {
    input += Multibulk({"SET", absl::StrCat("key:", i), absl::StrCat("value:", i)});
  }
  input += Multibulk({"INCRBY", "counter", "7"});
  ProcessResult r = Cli({"--pipe"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("errors: 0, replies: 1001"));
  EXPECT_EQ(cluster_.Stats().keys, 1001u);
  EXPECT_EQ(cluster_.Peek("key:999"), "value:999");
  EXPECT_EQ(CliOut({"GET", "counter"}), "7\n");
}

TEST_F(RespServerTest, RedisCliAuth) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  KvRespOptions options;
  options.password = "s3cret";
  StartServer(options);
  EXPECT_EQ(CliOut({"-a", "s3cret", "--no-auth-warning", "SET", "k", "v"}), "OK\n");
  EXPECT_EQ(CliOut({"-a", "s3cret", "--no-auth-warning", "GET", "k"}), "v\n");
  EXPECT_EQ(CliOut({"GET", "k"}), "NOAUTH Authentication required.\n\n");
  ProcessResult wrong = Cli({"-a", "nope", "--no-auth-warning", "GET", "k"});
  EXPECT_THAT(wrong.err, HasSubstr("AUTH failed: WRONGPASS invalid username-password pair"));
  EXPECT_EQ(wrong.out, "NOAUTH Authentication required.\n\n");
}

TEST_F(RespServerTest, RedisBenchmark) {
  if (!Executable(kRedisBenchmark)) {
    GTEST_SKIP() << kRedisBenchmark << " is not installed (redis-tools)";
  }
  absl::StatusOr<ProcessResult> r = RunProcess(
      {kRedisBenchmark, "-p", port_, "-t", "get,set", "-n", "2000", "-q"}, "", absl::Seconds(25));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, ::testing::ContainsRegex("SET: [0-9.]+ requests per second"));
  EXPECT_THAT(r->out, ::testing::ContainsRegex("GET: [0-9.]+ requests per second"));
  const RespStats stats = server_->stats();
  EXPECT_GE(stats.commands, 4000u);
  EXPECT_EQ(stats.error_replies, 0u);
}

TEST_F(RespServerTest, MalformedFramesGetTheRedisErrorAndAClose) {
  const std::pair<std::string, std::string> cases[] = {
      {"*x\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
      {"*1\r\n$-5\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
      {"*1\r\n:1\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
      {"PING\r\n*2000000\r\n", "+PONG\r\n-ERR Protocol error: invalid multibulk length\r\n"},
      {std::string(70000, 'a'), "-ERR Protocol error: too big inline request\r\n"},
  };
  for (const auto& [request, reply] : cases) {
    Client c(server_->port());
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(c.Send(request));
    std::string got;
    EXPECT_TRUE(c.ReceiveUntilClosed(&got)) << "not closed after " << request.substr(0, 20);
    EXPECT_EQ(got, reply);
  }
  EXPECT_EQ(server_->stats().protocol_errors, 5u);
  EXPECT_EQ(CliOut({"PING"}), "PONG\n");  // the server is fine
}

TEST_F(RespServerTest, ErrorsThatAreNotProtocolErrorsKeepTheConnection) {
  Client c(server_->port());
  ASSERT_TRUE(c.Send("FOO\r\nGET\r\nPING\r\n"));
  const std::string expected =
      "-ERR unknown command 'FOO', with args beginning with: \r\n"
      "-ERR wrong number of arguments for 'get' command\r\n+PONG\r\n";
  EXPECT_EQ(c.Receive(expected.size()), expected);
}

TEST_F(RespServerTest, HalfClosedClientGetsItsReplies) {
  Client c(server_->port());
  ASSERT_TRUE(c.Send("SET k v\r\nGET k\r\nGET"));  // the last request is cut short
  c.ShutdownWrite();
  std::string got;
  EXPECT_TRUE(c.ReceiveUntilClosed(&got));
  EXPECT_EQ(got, "+OK\r\n$1\r\nv\r\n");
}

TEST_F(RespServerTest, ClientsThatDisconnectMidRequest) {
  for (int i = 0; i < 20; ++i) {
    Client c(server_->port());
    ASSERT_TRUE(
        c.Send(absl::StrCat("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n", std::string(i, 'x'))));
    c.Close();
  }
  Client c(server_->port());
  ASSERT_TRUE(c.Send("SET k done\r\nGET k\r\n"));
  EXPECT_EQ(c.Receive(15), "+OK\r\n$4\r\ndone\r\n");
  c.Close();
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  while (server_->stats().connections_open > 0 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ(server_->stats().connections_open, 0u);
  EXPECT_EQ(server_->stats().connections_accepted, 21u);
}

TEST_F(RespServerTest, ManyClientsPipelining) {
  constexpr int kClients = 64;
  constexpr int kCommands = 50;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(clients.back()->connected());
  }
  std::vector<std::string> expected(kClients);
  for (int i = 0; i < kClients; ++i) {
    std::string pipeline;
    for (int j = 0; j < kCommands; ++j) {
      const std::string key = absl::StrCat("c", i, ":", j % 5);
      absl::StrAppend(&pipeline, "SET ", key, " ", j, "\r\nGET ", key, "\r\n");
      absl::StrAppend(&expected[i], "+OK\r\n$", absl::StrCat(j).size(), "\r\n", j, "\r\n");
    }
    absl::StrAppend(&pipeline, "INCR shared\r\n");
    ASSERT_TRUE(clients[i]->Send(pipeline));
  }
  for (int i = 0; i < kClients; ++i) {
    std::string got = clients[i]->Receive(expected[i].size());
    EXPECT_EQ(got, expected[i]) << "client " << i;
    std::string incr = clients[i]->Receive(3);  // ":N\r\n", N from 1 to kClients
    EXPECT_TRUE(absl::StartsWith(incr, ":")) << incr;
    while (incr.back() != '\n') incr += clients[i]->Receive(1);
  }
  EXPECT_EQ(CliOut({"GET", "shared"}), absl::StrCat(kClients, "\n"));
  EXPECT_EQ(server_->stats().connections_accepted, static_cast<uint64_t>(kClients) + 1);
}

TEST_F(RespServerTest, MaxClients) {
  KvRespOptions options;
  options.max_clients = 2;
  StartServer(options);
  Client a(server_->port()), b(server_->port());
  ASSERT_TRUE(a.Send("PING\r\n"));
  ASSERT_TRUE(b.Send("PING\r\n"));
  EXPECT_EQ(a.Receive(7), "+PONG\r\n");
  EXPECT_EQ(b.Receive(7), "+PONG\r\n");
  Client c(server_->port());
  std::string got;
  EXPECT_TRUE(c.ReceiveUntilClosed(&got));
  EXPECT_EQ(got, "-ERR max number of clients reached\r\n");
  EXPECT_EQ(server_->stats().connections_rejected, 1u);
}

TEST_F(RespServerTest, AClientThatDoesNotReadStopsBeingRead) {
  KvRespOptions options;
  options.max_output_bytes = 64 * 1024;
  StartServer(options);
  Client c(server_->port());
  // Big requests with big replies, sent without reading: once its replies back up, the
  // server must stop reading, so our sends stop getting through (the socket buffers
  // fill) long before anything like 256 MiB was sent.
  const std::string payload(64 * 1024, 'p');
  const std::string request = Multibulk({"ECHO", payload});
  std::string batch;
  for (int i = 0; i < 16; ++i) batch += request;
  size_t sent = 0;
  int blocked_polls = 0;
  while (blocked_polls < 5 && sent < (256u << 20)) {
    const size_t offset = sent % batch.size();
    const ssize_t n =
        ::send(c.fd(), batch.data() + offset, batch.size() - offset, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      blocked_polls = 0;
    } else {
      ASSERT_EQ(errno, EAGAIN);
      ++blocked_polls;
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  ASSERT_LT(sent, 256u << 20) << "the server kept reading a client that never reads";
  // Every complete request is still answered once the client reads.
  const size_t requests = sent / request.size();
  const size_t reply_size = absl::StrCat("$", payload.size(), "\r\n").size() + payload.size() + 2;
  const std::string got = c.Receive(requests * reply_size);
  ASSERT_EQ(got.size(), requests * reply_size);
  EXPECT_EQ(got.substr(0, reply_size), absl::StrCat("$", payload.size(), "\r\n", payload, "\r\n"));
  EXPECT_GT(requests, 2u);
}

TEST_F(RespServerTest, StopWithOpenConnectionsAndCommandsInFlight) {
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 8; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(
        clients.back()->Send(absl::StrCat("SET k", i, " v\r\nMULTI\r\nINCR x\r\n*3\r\n$3")));
  }
  Client c(server_->port());
  ASSERT_TRUE(c.Send("PING\r\n"));
  EXPECT_EQ(c.Receive(7), "+PONG\r\n");
  server_->Stop();
  for (auto& client : clients) {
    std::string got;
    EXPECT_TRUE(client->ReceiveUntilClosed(&got));
  }
  EXPECT_EQ(server_->stats().connections_open, 0u);
  server_.reset();  // and the destructor after Stop is fine
}

}  // namespace
}  // namespace farm::kv::resp
