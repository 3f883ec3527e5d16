// The RESP library serves any service: a session that is not the kv store's (an echo
// service with its own commands) plugged into RespServer on bare loops' Contexts —
// pipelined requests answered in order, a protocol error answered and the connection
// closed, a refused session, and max_clients.
#include "resp/resp_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "resp/resp_parser.h"
#include "resp/resp_writer.h"
#include "tests/support/loop_threads.h"

namespace farm::resp {
namespace {

// ECHO word -> the word; UPPER word -> it in capitals; WHO -> "thread T client C";
// anything else an error. Synchronous: replies are ready when Feed returns.
class EchoSession final : public ProtocolSession {
 public:
  explicit EchoSession(SessionInfo info) : info_(info) {}
  void set_on_progress(absl::AnyInvocable<void()>) override {}
  void Feed(absl::string_view bytes) override {
    if (closing_) return;
    parser_.Feed(bytes);
    RespWriter w(&output_);
    for (;;) {
      const RespParser::Result r = parser_.Parse();
      if (r == RespParser::Result::kNeedMore) return;
      if (r == RespParser::Result::kError) {
        w.Error(parser_.error());
        closing_ = true;
        return;
      }
      absl::Span<std::string> args = parser_.args();
      RespCounters::Add(info_.counters->commands);
      const std::string command = absl::AsciiStrToUpper(args[0]);
      if (command == "ECHO" && args.size() == 2) {
        w.Bulk(args[1]);
      } else if (command == "UPPER" && args.size() == 2) {
        w.Bulk(absl::AsciiStrToUpper(args[1]));
      } else if (command == "WHO") {
        w.SimpleString(absl::StrCat("thread ", info_.thread, " client ", info_.client_id));
      } else {
        w.Error(absl::StrCat("ERR unknown command '", args[0], "'"));
      }
    }
  }
  void EndOfInput() override { closing_ = true; }
  absl::string_view output() const override { return absl::string_view(output_).substr(pos_); }
  void ConsumeOutput(size_t n) override {
    pos_ += n;
    if (pos_ == output_.size()) output_.clear(), pos_ = 0;
  }
  bool wants_input() const override { return !closing_; }
  bool close_requested() const override { return closing_; }

 private:
  const SessionInfo info_;
  RespParser parser_;
  std::string output_;
  size_t pos_ = 0;
  bool closing_ = false;
};

// A blocking client socket.
class Client {
 public:
  explicit Client(uint16_t port) : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Client() { ::close(fd_); }
  bool connected() const { return connected_; }
  void Send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size())); }
  // Reads until `n` bytes arrived or the peer closed.
  std::string Receive(size_t n) {
    std::string got;
    char buf[4096];
    while (got.size() < n) {
      const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) break;
      got.append(buf, static_cast<size_t>(r));
    }
    return got;
  }
  // True when the peer has closed (recv returns 0 once the output is drained).
  bool ClosedByPeer() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_;
  bool connected_ = false;
};

class RespServerTest : public ::testing::Test {
 protected:
  void Start(SessionFactory factory, RespServerOptions options = {}) {
    ASSERT_TRUE(threads_.Start(2).ok());
    auto server = RespServer::Start(threads_.contexts(), std::move(factory), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  farm::testing::LoopThreads threads_;
  std::unique_ptr<RespServer> server_;  // stopped before the threads
};

SessionFactory Echo() {
  return [](const SessionInfo& info) { return std::make_shared<EchoSession>(info); };
}

TEST_F(RespServerTest, ServesAnotherServicesSessionsWithPipelinedRequestsInOrder) {
  Start(Echo());
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  // Three requests in one write, one of them inline, answered in order.
  c.Send("*2\r\n$4\r\nECHO\r\n$5\r\nhello\r\nUPPER farm\r\n*1\r\n$4\r\nNOPE\r\n");
  const std::string want = "$5\r\nhello\r\n$4\r\nFARM\r\n-ERR unknown command 'NOPE'\r\n";
  EXPECT_EQ(c.Receive(want.size()), want);
  // Connections go round-robin over the threads; each session is told its own.
  Client d(server_->port());
  d.Send("WHO\r\n");
  c.Send("WHO\r\n");
  const std::string from_d = d.Receive(strlen("+thread 1 client 2\r\n"));
  const std::string from_c = c.Receive(strlen("+thread 0 client 1\r\n"));
  EXPECT_EQ(from_c, "+thread 0 client 1\r\n");
  EXPECT_EQ(from_d, "+thread 1 client 2\r\n");
  EXPECT_EQ(server_->stats().commands, 5u);
  EXPECT_EQ(server_->stats().connections_open, 2u);
}

TEST_F(RespServerTest, AProtocolErrorIsAnsweredThenTheConnectionCloses) {
  Start(Echo());
  Client c(server_->port());
  c.Send("*1\r\n$x\r\n");
  const std::string want = "-ERR Protocol error: invalid bulk length\r\n";
  EXPECT_EQ(c.Receive(want.size()), want);
  EXPECT_TRUE(c.ClosedByPeer());
  Client d(server_->port());  // the server keeps serving
  d.Send("ECHO ok\r\n");
  EXPECT_EQ(d.Receive(8), "$2\r\nok\r\n");
}

TEST_F(RespServerTest, ANullSessionRefusesTheClientAndMaxClientsIsKept) {
  int made = 0;
  Start(
      [&made](const SessionInfo& info) -> std::shared_ptr<ProtocolSession> {
        if (info.client_id == 1) return nullptr;  // the service refuses the first client
        ++made;
        return std::make_shared<EchoSession>(info);
      },
      {.listen = "127.0.0.1:0", .max_clients = 1});
  Client refused(server_->port());
  EXPECT_TRUE(refused.ClosedByPeer());
  Client served(server_->port());
  served.Send("ECHO a\r\n");
  EXPECT_EQ(served.Receive(7), "$1\r\na\r\n");
  Client over(server_->port());  // one open already: rejected as Redis does
  const std::string want = "-ERR max number of clients reached\r\n";
  EXPECT_EQ(over.Receive(want.size()), want);
  EXPECT_EQ(made, 1);
  EXPECT_EQ(server_->stats().connections_rejected, 1u);
}

}  // namespace
}  // namespace farm::resp
