// RespConnection: one client socket on its worker thread, carrying bytes between the
// socket and a ProtocolSession (protocol_session.h).
//
// Reading: while the session wants input (protocol_session.h, contract 3), reads until
// the socket is empty (a short read or EAGAIN: the watch is level-triggered, so what
// arrives later reports again), at most kMaxReadsPerEvent reads per event so that one
// busy client cannot starve the others on its loop. When the session stops wanting input (too many
// commands in flight, too much output unread by the client), read interest is dropped:
// the kernel's socket buffer fills and TCP pushes back on the client.
// Writing: after every read, writes until EAGAIN; then waits for writability. Output that
// work completing later produced (the session's on_progress) is written by the
// thread's OutputFlusher once per loop pass, so a pipeline's replies that complete one
// by one leave in one send() (without a flusher: at once, as after a read).
// Closing: on a read or write error, on EPOLLERR/EPOLLHUP, or once the session asked
// for it (QUIT, protocol error, end of input) and its output is written. A client that
// half-closes (shutdown(SHUT_WR)) still gets the replies to what it sent.
//
// Threads: the loop thread only. Lifetime: the owner destroys the connection after
// on_closed ran, but not inside that callback (defer it); the destructor closes the
// socket if Close was not called.
#ifndef FARM_RESP_RESP_CONNECTION_H_
#define FARM_RESP_RESP_CONNECTION_H_

#include <cstdint>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "farm/api/unique_fd.h"
#include "resp/output_flusher.h"
#include "resp/protocol_session.h"
#include "resp/socket_watcher.h"

namespace farm::resp {

class RespConnection {
 public:
  // `fd`: a connected, non-blocking socket. `watcher` must outlive the connection.
  // `flusher` (the thread's; may be null) writes progress output once per loop pass.
  RespConnection(UniqueFd fd, SocketWatcher* watcher, std::shared_ptr<ProtocolSession> session,
                 absl::AnyInvocable<void(RespConnection*)> on_closed,
                 std::shared_ptr<OutputFlusher> flusher = nullptr);
  ~RespConnection();
  RespConnection(const RespConnection&) = delete;
  RespConnection& operator=(const RespConnection&) = delete;

  // Starts watching the socket.
  absl::Status Start();
  // Closes the socket now, dropping unsent output; runs on_closed once. Idempotent.
  void Close();
  bool closed() const { return closed_; }
  // Writes what the session has and updates the socket's interest (OutputFlusher).
  void Flush();

 private:
  void OnEvents(uint32_t events);
  // The session made progress outside the connection's own calls.
  void OnProgress();
  // Writes, closes if the session is finished, else updates the socket's interest.
  void Progress();
  void ReadSome();
  void WriteSome();

  UniqueFd fd_;
  SocketWatcher* const watcher_;
  std::shared_ptr<ProtocolSession> session_;
  absl::AnyInvocable<void(RespConnection*)> on_closed_;
  const std::shared_ptr<OutputFlusher> flusher_;
  bool flush_requested_ = false;  // flusher_ will call Flush
  SocketWatcher::Token token_ = 0;
  bool watching_ = false;
  bool read_interest_ = true;  // as registered with the watcher
  bool write_interest_ = false;
  bool want_write_ = false;  // the last write stopped at EAGAIN
  bool input_ended_ = false;
  bool closed_ = false;
};

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_CONNECTION_H_
