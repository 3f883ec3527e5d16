// RespServer: serves the Redis protocol (RESP2) on a node's worker threads (their
// Contexts) for any service: the service gives the session of each connection
// (protocol_session.h) — the kv store's RespSession, the graph service's.
//
//   auto server = RespServer::Start({&ctx0, &ctx1},
//                                   [&](const SessionInfo& i) { return MySession::Create(i); },
//                                   {.listen = "127.0.0.1:6379"});
//   ... redis-cli -p (*server)->port() ...
//   (*server)->Stop();
//
// The listening socket is watched on threads[0]; accepted connections are handed to the
// threads round-robin. A connection lives entirely on its thread with the session the
// factory made for it there (info.thread says which; a null session refuses the
// client). Over max_clients open connections, a new client gets "-ERR max number of
// clients reached" and is closed, as with Redis.
//
// Threads and lifetime: Start, Stop, the destructor and stats() are called from a
// thread that is not one of those threads (Stop waits for each), while every one is
// running. port() and stats() may be called from any thread. The threads and whatever
// the sessions use must outlive the server, and the operations sessions start (their
// callbacks may run after Stop and find their session gone: they must do nothing then). Stop closes every connection on its own thread, then the
// listener; it is idempotent and the destructor calls it.
#ifndef FARM_RESP_RESP_SERVER_H_
#define FARM_RESP_RESP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/unique_fd.h"
#include "resp/protocol_session.h"
#include "resp/resp_counters.h"

namespace farm::resp {

struct RespServerOptions {
  // "host:port" (numeric host; "[::1]:port" for IPv6); port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  size_t max_clients = 10000;
};

class RespServerWorker;

class RespServer {
 public:
  static absl::StatusOr<std::unique_ptr<RespServer>> Start(
      std::vector<Context*> threads, SessionFactory factory, RespServerOptions options);
  ~RespServer();
  RespServer(const RespServer&) = delete;
  RespServer& operator=(const RespServer&) = delete;

  uint16_t port() const { return port_; }
  RespStats stats() const { return counters_.Snapshot(); }
  void Stop();

 private:
  RespServer(std::vector<Context*> threads, RespServerOptions options);
  absl::Status Listen();
  void OnAcceptable();  // threads[0]
  void Reject(UniqueFd fd);
  void PauseAccepting();

  const std::vector<Context*> threads_;
  const RespServerOptions options_;
  RespCounters counters_;
  std::vector<std::unique_ptr<RespServerWorker>> workers_;
  UniqueFd listen_fd_;
  uint16_t port_ = 0;
  bool listening_ = false;               // threads[0] watches listen_fd_
  size_t next_worker_ = 0;               // threads[0]
  uint64_t next_client_id_ = 1;          // threads[0]
  Context::TimerId resume_timer_ = 0;  // threads[0]; accepting paused at the fd limit
  bool stopped_ = false;
};

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_SERVER_H_
