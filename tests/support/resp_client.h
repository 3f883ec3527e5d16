// RespClient: one blocking RESP connection to 127.0.0.1:port with a 10 s receive
// timeout, for the process tests of RESP services.
#ifndef FARM_TESTS_SUPPORT_RESP_CLIENT_H_
#define FARM_TESTS_SUPPORT_RESP_CLIENT_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "farm/base/unique_fd.h"

namespace farm::testing {

class RespClient {
 public:
  static std::optional<RespClient> Connect(uint16_t port) {
    RespClient c;
    c.fd_.reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(c.fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
      return std::nullopt;
    timeval tv{.tv_sec = 10, .tv_usec = 0};
    ::setsockopt(c.fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return c;
  }

  // Sends a command as a RESP array and returns the reply: "+OK", "-ERR ...", ":1",
  // the bulk string's bytes, "(nil)", an array as "[a,b]" (its elements so rendered),
  // "(nil array)"; "(timeout)" or "(closed)" when none came.
  std::string Call(const std::vector<std::string>& args) {
    std::string request = absl::StrCat("*", args.size(), "\r\n");
    for (const std::string& a : args) absl::StrAppend(&request, "$", a.size(), "\r\n", a, "\r\n");
    return Raw(request);
  }
  // Sends every command at once (a pipeline), then reads one reply per command.
  std::vector<std::string> Pipeline(const std::vector<std::vector<std::string>>& commands) {
    std::string request;
    for (const std::vector<std::string>& args : commands) {
      absl::StrAppend(&request, "*", args.size(), "\r\n");
      for (const std::string& a : args) absl::StrAppend(&request, "$", a.size(), "\r\n", a, "\r\n");
    }
    std::vector<std::string> replies;
    if (::send(fd_.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
      return replies;
    }
    for (size_t i = 0; i < commands.size(); ++i) replies.push_back(Reply());
    return replies;
  }
  std::string Raw(const std::string& bytes) {
    if (::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) !=
        static_cast<ssize_t>(bytes.size())) {
      return "(closed)";
    }
    return Reply();
  }

 private:
  RespClient() = default;
  std::string Reply() {
    std::optional<std::string> line = Line();
    if (!line) return errno == EAGAIN ? "(timeout)" : "(closed)";
    if (!line->empty() && (*line)[0] == '*') {
      int64_t n = 0;
      if (!absl::SimpleAtoi(line->substr(1), &n)) return "(bad reply)";
      if (n < 0) return "(nil array)";
      std::string all = "[";
      for (int64_t i = 0; i < n; ++i) absl::StrAppend(&all, i == 0 ? "" : ",", Reply());
      return all + "]";
    }
    if (line->empty() || (*line)[0] != '$') return *line;
    int64_t n = 0;
    if (!absl::SimpleAtoi(line->substr(1), &n)) return "(bad reply)";
    if (n < 0) return "(nil)";
    while (buffer_.size() < static_cast<size_t>(n) + 2) {
      if (!Fill()) return "(closed)";
    }
    std::string value = buffer_.substr(0, n);
    buffer_.erase(0, n + 2);
    return value;
  }
  std::optional<std::string> Line() {
    for (;;) {
      if (size_t end = buffer_.find("\r\n"); end != std::string::npos) {
        std::string line = buffer_.substr(0, end);
        buffer_.erase(0, end + 2);
        return line;
      }
      if (!Fill()) return std::nullopt;
    }
  }
  bool Fill() {
    char chunk[4096];
    const ssize_t n = ::recv(fd_.get(), chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    buffer_.append(chunk, n);
    return true;
  }
  UniqueFd fd_;
  std::string buffer_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_RESP_CLIENT_H_
