// The graph RESP server on loop threads with MemoryGraphStores, driven by the real
// redis-cli (arguments, stdin, -x binary data, --pipe, an interactive session on a
// pseudo-terminal) and by raw sockets (pipelining, per-thread stores, protocol errors).
#include "graph/resp/graph_resp_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/base/unique_fd.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "graph/memory_graph.h"
#include "tests/graph/resp/graph_session_env.h"
#include "tests/kv/resp/resp_reply_reader.h"
#include "tests/kv/resp/run_process.h"
#include "tests/support/loop_threads.h"

namespace farm::graph {
namespace {

using ::farm::graph::testing::Multibulk;
using ::farm::kv::testing::DecodeReplies;
using ::farm::kv::testing::ProcessResult;
using ::farm::kv::testing::RunProcess;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kRedisCli[] = "/usr/bin/redis-cli";

bool Executable(const char* path) { return ::access(path, X_OK) == 0; }

// A blocking client socket that reads whole replies.
class Client {
 public:
  explicit Client(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool connected() const { return connected_; }
  bool Send(absl::string_view bytes) {
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }
  // Reads until at least `n` replies arrived (decoded as tests/kv/resp/resp_reply_reader.h
  // does), the server closed, or the timeout; returns (and forgets) every complete one.
  std::vector<std::string> Replies(size_t n) {
    for (;;) {
      kv::testing::DecodedReplies d = DecodeReplies(received_);
      if (d.replies.size() >= n || d.malformed || closed_) {
        received_.erase(0, d.consumed);
        return d.replies;
      }
      char buffer[65536];
      const ssize_t got = ::recv(fd_.get(), buffer, sizeof(buffer), 0);
      if (got <= 0) {
        closed_ = true;
        continue;
      }
      received_.append(buffer, static_cast<size_t>(got));
    }
  }
  std::string Call(const std::vector<std::string>& words) {
    if (!Send(Multibulk(words))) return "(send failed)";
    std::vector<std::string> r = Replies(1);
    return r.size() == 1 ? r[0] : absl::StrCat("(", r.size(), " replies)");
  }
  // True once the server has closed the connection.
  bool Closed() {
    char c;
    return closed_ || ::recv(fd_.get(), &c, 1, 0) == 0;
  }

 private:
  UniqueFd fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string received_;
};

class GraphRespServerTest : public ::testing::Test {
 protected:
  void SetUp() override { StartServer(1); }

  void StartServer(size_t threads, GraphRespOptions options = {}) {
    server_.reset();
    threads_.Stop();
    stores_.clear();
    graphs_.clear();
    ASSERT_TRUE(threads_.Start(threads).ok());
    for (size_t i = 0; i < threads; ++i) {
      graphs_.push_back(std::make_unique<MemoryGraph>());
      stores_.push_back(std::make_unique<MemoryGraphStore>(*threads_.contexts()[i], *graphs_[i]));
    }
    auto server = StartGraphRespServer(
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
  std::string CliOut(std::vector<std::string> args, const std::string& input = "") {
    ProcessResult r = Cli(std::move(args), input);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  }

  // Destroyed in reverse: the server (stops on its loops), the loops (joined), then the
  // stores and graphs their pending work may name.
  std::vector<std::unique_ptr<MemoryGraph>> graphs_;
  std::vector<std::unique_ptr<MemoryGraphStore>> stores_;
  farm::testing::LoopThreads threads_;
  std::unique_ptr<::farm::resp::RespServer> server_;
  std::string port_;
};

TEST_F(GraphRespServerTest, RedisCliCommands) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  EXPECT_EQ(CliOut({"PING"}), "PONG\n");
  EXPECT_EQ(CliOut({"NODE.ADD", "2048", "1", "100", "hello world"}), "1\n");
  EXPECT_EQ(CliOut({"NODE.GET", "1", "2048"}), "1\n2048\n1\n100\nhello world\n");
  EXPECT_EQ(CliOut({"NODE.GET", "1", "7"}), "\n");
  EXPECT_EQ(CliOut({"NODE.UPDATE", "1", "2048", "2", "200", "bye"}), "1\n");
  EXPECT_EQ(CliOut({"LINK.ADD", "1", "123456789", "2", "1", "0", "1000", "l2"}), "1\n");
  EXPECT_EQ(CliOut({"LINK.ADD", "1", "123456789", "3", "1", "0", "2000", "l3"}), "1\n");
  EXPECT_EQ(CliOut({"LINK.COUNT", "1", "123456789"}), "2\n");
  EXPECT_EQ(CliOut({"LINK.RANGE", "1", "123456789", "0", "5000", "0", "10"}),
            "1\n123456789\n3\n1\n0\n2000\nl3\n1\n123456789\n2\n1\n0\n1000\nl2\n");
  EXPECT_EQ(CliOut({"LINK.DELETE", "1", "123456789", "3"}), "1\n");
  EXPECT_EQ(CliOut({"LINK.GET", "1", "123456789", "3"}), "1\n123456789\n3\n0\n0\n2000\nl3\n");
  EXPECT_EQ(CliOut({"LINK.COUNT", "1", "123456789"}), "1\n");
  EXPECT_EQ(CliOut({"NODE.RESET", "500"}), "OK\n");
  EXPECT_EQ(CliOut({"NODE.ADD", "2048", "1", "100", "x"}), "500\n");
  EXPECT_EQ(CliOut({"NODE.ADD", "2048", "1", "100"}),
            "ERR wrong number of arguments for 'node.add' command\n\n");
  EXPECT_EQ(CliOut({"LINK.RANGE", "1", "1", "0", "1", "0", "10001"}),
            "ERR limit is out of range, must be between 0 and 10000\n\n");
  EXPECT_EQ(CliOut({"FOO", "bar"}), "ERR unknown command 'FOO', with args beginning with: 'bar' \n\n");
}

TEST_F(GraphRespServerTest, RedisCliCommandsFromStdin) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  EXPECT_EQ(CliOut({}, "NODE.ADD 7 1 10 a\nNODE.ADD 7 1 11 b\nNODE.DELETE 1 7\nNODE.GET 1 7\n"
                       "NODE.GET 2 7\nLINK.ADD 2 9 1 1 5 60 c\nLINK.COUNT 2 9\nSELECT 0\n"),
            "1\n2\n1\n\n2\n7\n1\n11\nb\n1\n1\nOK\n");
}

TEST_F(GraphRespServerTest, RedisCliBinaryDataFromStdin) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  const std::string data("a\0b\r\nc\xff", 7);
  EXPECT_EQ(CliOut({"-x", "NODE.ADD", "2048", "3", "4"}, data), "1\n");
  EXPECT_EQ(CliOut({"-x", "LINK.ADD", "1", "2", "3", "1", "4", "5"}, data), "1\n");
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.Call({"NODE.GET", "1", "2048"}), absl::StrCat("[:1, :2048, :3, :4, ", data, "]"));
  EXPECT_EQ(client.Call({"LINK.GET", "1", "2", "3"}), absl::StrCat("[[:1, :2, :3, :1, :4, :5, ", data, "]]"));
}

TEST_F(GraphRespServerTest, RedisCliPipe) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  std::string input;
  for (int i = 0; i < 1000; ++i) {
    input += Multibulk({"LINK.ADD", "1", "5", absl::StrCat(i), "1", "1", absl::StrCat(i), "x"});
  }
  input += Multibulk({"NODE.ADD", "1", "1", "1", "y"});
  ProcessResult r = Cli({"--pipe"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("errors: 0, replies: 1001"));
  EXPECT_EQ(CliOut({"LINK.COUNT", "1", "5"}), "1000\n");
}

// redis-cli on a terminal asks COMMAND DOCS when it connects (for its hints); the
// session must answer it and go on.
TEST_F(GraphRespServerTest, RedisCliInteractive) {
  if (!Executable(kRedisCli)) GTEST_SKIP() << kRedisCli << " is not installed (redis-tools)";
  int master = -1;
  winsize size{.ws_row = 24, .ws_col = 120, .ws_xpixel = 0, .ws_ypixel = 0};
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &size);
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl(kRedisCli, kRedisCli, "-p", port_.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  UniqueFd pty(master);
  std::string out;
  size_t seen = 0;  // out[0, seen) was matched already
  // Reads the terminal until `text` appears after what was matched (or redis-cli exits,
  // or 10 s); then it is matched too.
  auto read_until = [&](const std::string& text) {
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (out.find(text, seen) == std::string::npos && absl::Now() < deadline) {
      pollfd p{pty.get(), POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[4096];
      const ssize_t n = ::read(pty.get(), buffer, sizeof(buffer));
      if (n <= 0) return false;  // EIO once redis-cli has exited
      out.append(buffer, static_cast<size_t>(n));
    }
    const size_t at = out.find(text, seen);
    if (at == std::string::npos) return false;
    seen = at + text.size();
    return true;
  };
  // Each line is typed once the prompt is there (linenoise flushes earlier input).
  const std::string prompt = absl::StrCat("127.0.0.1:", port_, "> ");
  const std::pair<std::string, std::string> dialogue[] = {
      {"NODE.ADD 2048 1 100 hi\r", "(integer) 1"},
      {"NODE.GET 1 2048\r", "\"hi\""},
      {"LINK.COUNT 1 2\r", "(integer) 0"},
  };
  for (const auto& [line, answer] : dialogue) {
    ASSERT_TRUE(read_until(prompt)) << out;
    ASSERT_EQ(::write(pty.get(), line.data(), line.size()), static_cast<ssize_t>(line.size()));
    EXPECT_TRUE(read_until(answer)) << out;
  }
  ASSERT_TRUE(read_until(prompt)) << out;
  ASSERT_EQ(::write(pty.get(), "quit\r", 5), 5);
  read_until("(never printed)");  // until redis-cli exits
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_THAT(out, Not(HasSubstr("ERR")));
  EXPECT_THAT(out, Not(HasSubstr("Could not connect")));
  // COMMAND DOCS (redis-cli 7) and the three lines; redis-cli handles quit itself.
  EXPECT_GE(server_->stats().commands, 4u);
}

TEST_F(GraphRespServerTest, PipelinedRequestsOverASocket) {
  Client client(server_->port());
  ASSERT_TRUE(client.connected());
  std::string input;
  std::vector<std::string> expected;
  for (int i = 1; i <= 3000; ++i) {
    input += Multibulk({"NODE.ADD", "1", "1", "1", std::string(static_cast<size_t>(i % 500), 'v')});
    expected.push_back(absl::StrCat(":", i));
    input += Multibulk({"ECHO", absl::StrCat("#", i)});
    expected.push_back(absl::StrCat("#", i));
  }
  ASSERT_TRUE(client.Send(input));
  EXPECT_EQ(client.Replies(expected.size()), expected);
}

// Each thread's connections use that thread's store (connections go round-robin).
TEST_F(GraphRespServerTest, EachThreadServesItsOwnStore) {
  StartServer(2);
  std::vector<std::string> ids;
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 4; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    ASSERT_TRUE(clients.back()->connected());
    ids.push_back(clients.back()->Call({"NODE.ADD", "1", "1", "1", "x"}));
  }
  EXPECT_EQ(ids, (std::vector<std::string>{":1", ":1", ":2", ":2"}));
  EXPECT_EQ(graphs_[0]->GetNode(2, 1).has_value(), true);
  EXPECT_EQ(graphs_[1]->GetNode(2, 1).has_value(), true);
  EXPECT_EQ(server_->stats().connections_open, 4u);
}

TEST_F(GraphRespServerTest, ProtocolErrorAndQuitClose) {
  Client a(server_->port());
  ASSERT_TRUE(a.Send(Multibulk({"PING"}) + "*1\r\n$x\r\n"));
  EXPECT_EQ(a.Replies(2), (std::vector<std::string>{"+PONG", "-ERR Protocol error: invalid bulk length"}));
  EXPECT_TRUE(a.Closed());
  Client b(server_->port());
  EXPECT_EQ(b.Call({"QUIT"}), "+OK");
  EXPECT_TRUE(b.Closed());
  EXPECT_EQ(server_->stats().protocol_errors, 1u);
}

TEST_F(GraphRespServerTest, OversizeBulkIsAProtocolErrorOverMaxBulkBytes) {
  GraphRespOptions options;
  options.max_bulk_bytes = 2 << 20;
  StartServer(1, options);
  Client client(server_->port());
  EXPECT_EQ(client.Call({"NODE.ADD", "1", "1", "1", std::string((1 << 20) + 1, 'x')}),
            "-ERR node data is too large (1048577 bytes; the limit is 1048576)");
  ASSERT_TRUE(client.Send("*5\r\n$8\r\nNODE.ADD\r\n$1\r\n1\r\n$1\r\n1\r\n$1\r\n1\r\n$2097153\r\n"));
  EXPECT_EQ(client.Replies(1), (std::vector<std::string>{"-ERR Protocol error: invalid bulk length"}));
  EXPECT_TRUE(client.Closed());
}

TEST(GraphRespServerStartTest, RefusesMissingThreadsOrStores) {
  EXPECT_TRUE(absl::IsInvalidArgument(
      StartGraphRespServer({}, [](size_t) -> GraphStore* { return nullptr; }, {}).status()));
  farm::testing::LoopThreads threads;
  ASSERT_TRUE(threads.Start(1).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(
      StartGraphRespServer(threads.contexts(), [](size_t) -> GraphStore* { return nullptr; }, {})
          .status()));
  EXPECT_TRUE(absl::IsInvalidArgument(StartGraphRespServer(threads.contexts(), nullptr, {}).status()));
}

}  // namespace
}  // namespace farm::graph
