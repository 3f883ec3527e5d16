// FabricServer: the passive side of a fabric backend, on one thread.
//
// Accepts connections on a listening socket, runs the authenticated handshake
// (handshake.h) as a state machine, asks the AcceptHandler, and then hands the
// connection's input to the backend (ProcessInput). It blocks in epoll_wait when idle:
// no busy polling. Unauthenticated connections get `handshake_timeout` to prove
// themselves and nothing they send is interpreted before that.
//
// Threads: the constructor and Start run on any thread; everything else, including
// ProcessInput and the AcceptHandler, runs on the server thread. The destructor stops
// the thread and runs the on_close of every established connection.
#ifndef FARM_FABRIC_FABRIC_SERVER_H_
#define FARM_FABRIC_FABRIC_SERVER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/unique_fd.h"
#include "farm/fabric/byte_buffer.h"
#include "farm/fabric/fabric.h"
#include "farm/fabric/handshake.h"

namespace farm {

class FabricServer {
 public:
  struct Conn {
    UniqueFd fd;
    ByteBuffer in;
    ByteBuffer out;  // flushed by the server after ProcessInput
    bool established = false;
    std::unique_ptr<ServerHandshake> handshake;
    absl::Time handshake_deadline;
    absl::AnyInvocable<void()> on_close;
    uint32_t epoll_events = 0;
    // The backend's per-connection state (verbs: the responder queue pair); destroyed
    // with the connection, after on_close.
    std::shared_ptr<void> backend_state;
  };

  FabricServer(UniqueFd listen_fd, ClusterKey key, std::string name,
               absl::Duration handshake_timeout = absl::Seconds(10));
  virtual ~FabricServer();

  // Starts the thread. Call once. Subclasses must be fully constructed.
  absl::Status Start(AcceptHandler handler);
  // Stops the thread and closes all connections. Idempotent; subclasses call it first
  // in their destructor so that ProcessInput never runs on a half-destroyed object.
  void Stop();

  // Returns once the server thread has finished any batch of requests it was running
  // when called. Callers revoke access first; the server sees the revocation after.
  void WaitQuiescent() const;

  size_t connection_count() const { return connections_.load(std::memory_order_relaxed); }

 protected:
  // Consumes complete frames from conn.in of an established connection; appends output
  // to conn.out or writes to conn.fd directly. An error closes the connection (logged
  // with the error). Return OK with a partial frame left in conn.in to wait for more.
  virtual absl::Status ProcessInput(Conn& conn) = 0;

  // Stops reading from a connection while its unsent output exceeds this (back-pressure
  // on a peer that does not read its responses).
  static constexpr size_t kMaxPendingOutput = 64u << 20;

 private:
  void Run();
  void Accept();
  void HandleEvents(Conn& conn, uint32_t events);
  void Close(int fd, const absl::Status& why);
  void UpdateInterest(Conn& conn);
  void ExpireHandshakes();

  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;
  UniqueFd stop_fd_;
  const ClusterKey key_;
  const std::string name_;
  const absl::Duration handshake_timeout_;
  AcceptHandler handler_;
  std::thread thread_;
  absl::flat_hash_map<int, std::unique_ptr<Conn>> conns_;  // server thread only
  std::atomic<size_t> connections_{0};
  // (epoch << 1) | busy. Written by the server thread around each batch.
  std::atomic<uint64_t> activity_{0};
};

}  // namespace farm

#endif  // FARM_FABRIC_FABRIC_SERVER_H_
