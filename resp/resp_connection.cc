#include "resp/resp_connection.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

namespace farm::resp {
namespace {

constexpr size_t kReadChunk = 16 * 1024;
constexpr int kMaxReadsPerEvent = 16;

}  // namespace

RespConnection::RespConnection(UniqueFd fd, SocketWatcher* watcher,
                               std::shared_ptr<ProtocolSession> session,
                               absl::AnyInvocable<void(RespConnection*)> on_closed,
                               std::shared_ptr<OutputFlusher> flusher)
    : fd_(std::move(fd)),
      watcher_(watcher),
      session_(std::move(session)),
      on_closed_(std::move(on_closed)),
      flusher_(std::move(flusher)) {}

RespConnection::~RespConnection() {
  on_closed_ = nullptr;
  Close();
}

absl::Status RespConnection::Start() {
  absl::StatusOr<SocketWatcher::Token> token = watcher_->Add(
      fd_.get(), /*read=*/true, /*write=*/false, [this](uint32_t events) { OnEvents(events); });
  if (!token.ok()) return token.status();
  token_ = *token;
  watching_ = true;
  // Work that completes later reports here; the session outlives no connection that uses it.
  session_->set_on_progress([this] { OnProgress(); });
  return absl::OkStatus();
}

void RespConnection::Close() {
  if (closed_) return;
  closed_ = true;
  session_->set_on_progress(nullptr);
  if (flush_requested_) flusher_->Cancel(this);
  flush_requested_ = false;
  if (watching_) watcher_->Remove(token_);
  watching_ = false;
  fd_.reset();
  if (on_closed_) {
    auto on_closed = std::move(on_closed_);
    on_closed(this);
  }
}

void RespConnection::OnEvents(uint32_t events) {
  if (closed_) return;
  if (events & (EPOLLERR | EPOLLHUP)) {
    // Reset or fully shut down: nothing can be written any more.
    Close();
    return;
  }
  if (events & EPOLLOUT) WriteSome();
  if (!closed_ && (events & EPOLLIN)) ReadSome();
  if (!closed_) Progress();
}

void RespConnection::OnProgress() {
  if (flusher_ == nullptr) return Progress();
  if (flush_requested_ || closed_) return;
  flush_requested_ = true;
  flusher_->Request(this);
}

void RespConnection::Flush() {
  flush_requested_ = false;
  Progress();
}

void RespConnection::ReadSome() {
  char buffer[kReadChunk];
  for (int i = 0; i < kMaxReadsPerEvent && !input_ended_ && session_->wants_input(); ++i) {
    const ssize_t n = ::read(fd_.get(), buffer, sizeof(buffer));
    if (n > 0) {
      session_->Feed(absl::string_view(buffer, static_cast<size_t>(n)));
      WriteSome();  // keep what waits for the client small
      if (closed_) return;
      // A short read emptied the socket's buffer: the watch is level-triggered, so data
      // arriving from here on reports again, and a read now would only say EAGAIN.
      if (static_cast<size_t>(n) < sizeof(buffer)) return;
      continue;
    }
    if (n == 0) {
      input_ended_ = true;
      session_->EndOfInput();
      return;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return;
    Close();
    return;
  }
}

void RespConnection::WriteSome() {
  for (;;) {
    const absl::string_view out = session_->output();
    if (out.empty()) {
      want_write_ = false;
      return;
    }
    const ssize_t n = ::send(fd_.get(), out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      session_->ConsumeOutput(static_cast<size_t>(n));  // may start waiting commands
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      want_write_ = true;
      return;
    }
    Close();  // EPIPE, ECONNRESET: the client is gone
    return;
  }
}

void RespConnection::Progress() {
  if (closed_) return;
  WriteSome();
  if (closed_) return;
  if (session_->close_requested() && session_->output().empty()) {
    Close();
    return;
  }
  // Input held back may be waiting in the socket: level-triggered interest reports it
  // as soon as reading is wanted again.
  const bool read = !input_ended_ && session_->wants_input();
  const bool write = want_write_;
  if (read == read_interest_ && write == write_interest_) return;
  if (!watcher_->Update(token_, read, write).ok()) {
    Close();
    return;
  }
  read_interest_ = read;
  write_interest_ = write;
}

}  // namespace farm::resp
