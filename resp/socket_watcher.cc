#include "resp/socket_watcher.h"

#include <sys/epoll.h>

#include <cerrno>

namespace farm::resp {
namespace {

constexpr int kMaxEventsPerDispatch = 64;

uint32_t Interest(bool read, bool write) { return (read ? EPOLLIN : 0u) | (write ? EPOLLOUT : 0u); }

}  // namespace

absl::StatusOr<std::unique_ptr<SocketWatcher>> SocketWatcher::Create(Context* ctx) {
  UniqueFd epfd(::epoll_create1(EPOLL_CLOEXEC));
  if (!epfd.valid()) return absl::ErrnoToStatus(errno, "epoll_create1");
  std::unique_ptr<SocketWatcher> watcher(new SocketWatcher(ctx, std::move(epfd)));
  SocketWatcher* w = watcher.get();
  absl::Status s = ctx->WatchFd(w->epoll_fd_.get(), [w] { w->Dispatch(); });
  if (!s.ok()) return s;
  return watcher;
}

SocketWatcher::~SocketWatcher() { ctx_->UnwatchFd(epoll_fd_.get()); }

absl::StatusOr<SocketWatcher::Token> SocketWatcher::Add(int fd, bool read, bool write,
                                                        Callback callback) {
  const Token token = next_token_++;
  epoll_event ev{};
  ev.events = Interest(read, write);
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(ADD)");
  }
  entries_.emplace(token, std::make_unique<Entry>(Entry{fd, std::move(callback)}));
  return token;
}

absl::Status SocketWatcher::Update(Token token, bool read, bool write) {
  auto it = entries_.find(token);
  if (it == entries_.end()) return absl::NotFoundError("no such socket");
  epoll_event ev{};
  ev.events = Interest(read, write);
  ev.data.u64 = token;
  if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, it->second->fd, &ev) != 0) {
    return absl::ErrnoToStatus(errno, "epoll_ctl(MOD)");
  }
  return absl::OkStatus();
}

void SocketWatcher::Remove(Token token) {
  auto it = entries_.find(token);
  if (it == entries_.end()) return;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, it->second->fd, nullptr);
  if (dispatching_) removed_.push_back(std::move(it->second));
  entries_.erase(it);
}

void SocketWatcher::Dispatch() {
  epoll_event events[kMaxEventsPerDispatch];
  const int n = ::epoll_wait(epoll_fd_.get(), events, kMaxEventsPerDispatch, 0);
  dispatching_ = true;
  for (int i = 0; i < n; ++i) {
    auto it = entries_.find(events[i].data.u64);
    if (it == entries_.end()) continue;  // removed by an earlier callback
    Entry* entry = it->second.get();     // stays valid: removal parks it in removed_
    entry->callback(events[i].events);
  }
  dispatching_ = false;
  removed_.clear();
}

}  // namespace farm::resp
