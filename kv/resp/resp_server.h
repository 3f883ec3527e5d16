// RespServer: a Redis-protocol (RESP2) service over per-thread kv::Stores, on a node's
// worker threads' event loops.
//
//   auto server = RespServer::Start({&loop0, &loop1},
//                                   [&](size_t i) { return stores[i].get(); }, options);
//   ... redis-cli -p (*server)->port() ...
//   (*server)->Stop();
//
// The listening socket is watched on loops[0]; accepted connections are handed to the
// loops round-robin. A connection lives entirely on its loop's thread and uses that
// thread's Store, store_of(i), through a RespSession (resp_session.h). Over max_clients
// open connections, a new client gets "-ERR max number of clients reached" and is
// closed, as with Redis.
//
// Threads and lifetime: Start, Stop, the destructor and stats() are called from a
// thread that is not one of the loops' threads (Stop waits for each loop), while every
// loop is running. port() and stats() may be called from any thread. The loops and the
// stores must outlive the server; each store must also outlive the operations started
// on it (store callbacks may run after Stop and find their session gone: they do
// nothing then). Stop closes every connection on its own loop thread, then the
// listener; it is idempotent and the destructor calls it.
#ifndef FARM_KV_RESP_RESP_SERVER_H_
#define FARM_KV_RESP_RESP_SERVER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/unique_fd.h"
#include "farm/event/event_loop.h"
#include "kv/resp/resp_counters.h"
#include "kv/store.h"

namespace farm::kv::resp {

struct RespServerOptions {
  // "host:port" (numeric host; "[::1]:port" for IPv6); port 0 picks a free one.
  std::string listen = "127.0.0.1:0";
  std::string password;                  // empty: no AUTH
  int64_t max_bulk_bytes = 512ll << 20;  // longest argument a request may carry
  size_t max_clients = 10000;
  size_t max_output_bytes = 64 << 20;  // per client: replies waiting to be read
  size_t max_in_flight = 128;          // per client: commands started, not replied
  int max_txn_attempts = 100;
};

class RespServerWorker;

class RespServer {
 public:
  static absl::StatusOr<std::unique_ptr<RespServer>> Start(
      std::vector<EventLoop*> loops, std::function<Store*(size_t thread)> store_of,
      RespServerOptions options);
  ~RespServer();
  RespServer(const RespServer&) = delete;
  RespServer& operator=(const RespServer&) = delete;

  uint16_t port() const { return port_; }
  RespStats stats() const { return counters_.Snapshot(); }
  void Stop();

 private:
  RespServer(std::vector<EventLoop*> loops, RespServerOptions options);
  absl::Status Listen();
  void OnAcceptable();  // loops[0]
  void Reject(UniqueFd fd);
  void PauseAccepting();

  const std::vector<EventLoop*> loops_;
  const RespServerOptions options_;
  RespCounters counters_;
  std::vector<std::unique_ptr<RespServerWorker>> workers_;
  UniqueFd listen_fd_;
  uint16_t port_ = 0;
  bool listening_ = false;               // loops[0] watches listen_fd_
  size_t next_worker_ = 0;               // loops[0]
  uint64_t next_client_id_ = 1;          // loops[0]
  EventLoop::TimerId resume_timer_ = 0;  // loops[0]; accepting paused at the fd limit
  bool stopped_ = false;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_RESP_SERVER_H_
