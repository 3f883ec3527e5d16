// SocketWatcher: sockets watched for readability and writability on one EventLoop.
//
// EventLoop::WatchFd reports readability only, and a connection whose client is slow
// to read must wait for its socket to drain. So the watcher keeps its own epoll set
// (level-triggered; each socket's interest changed with Update) and has its Context watch
// that epoll descriptor, which is readable while any socket in the set is ready. No
// timers, no change to the Context. (Were WatchFd to take an event mask, this class
// would shrink to a map of callbacks.)
//
// Threads: everything, Create and the destructor included, on the Context's thread.
// Callbacks run there. A callback may Add, Update or Remove any socket, its own
// included; events already collected for a removed socket are dropped (sockets are
// named by tokens, not descriptor numbers, so a reused number is never confused).
#ifndef FARM_RESP_SOCKET_WATCHER_H_
#define FARM_RESP_SOCKET_WATCHER_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/api/unique_fd.h"
#include "farm/api/farm.h"

namespace farm::resp {

class SocketWatcher {
 public:
  // Gets the epoll event bits (EPOLLIN, EPOLLOUT, EPOLLERR, EPOLLHUP).
  using Callback = absl::AnyInvocable<void(uint32_t events)>;
  using Token = uint64_t;

  static absl::StatusOr<std::unique_ptr<SocketWatcher>> Create(Context* ctx);
  ~SocketWatcher();
  SocketWatcher(const SocketWatcher&) = delete;
  SocketWatcher& operator=(const SocketWatcher&) = delete;

  // Watches `fd` (not owned; Remove it before closing it).
  absl::StatusOr<Token> Add(int fd, bool read, bool write, Callback callback);
  absl::Status Update(Token token, bool read, bool write);
  void Remove(Token token);

 private:
  struct Entry {
    int fd;
    Callback callback;
  };

  SocketWatcher(Context* ctx, UniqueFd epoll_fd) : ctx_(ctx), epoll_fd_(std::move(epoll_fd)) {}
  void Dispatch();

  Context* const ctx_;
  UniqueFd epoll_fd_;
  absl::flat_hash_map<Token, std::unique_ptr<Entry>> entries_;
  // Entries removed during Dispatch, kept until it ends: a callback may remove itself.
  std::vector<std::unique_ptr<Entry>> removed_;
  Token next_token_ = 1;
  bool dispatching_ = false;
};

}  // namespace farm::resp

#endif  // FARM_RESP_SOCKET_WATCHER_H_
