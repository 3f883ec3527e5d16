// RespServerWorker: RespServer's part on one worker thread — the connections it was
// handed and the SocketWatcher of their sockets. Private to RespServer.
//
// Threads: constructed and destroyed anywhere; everything else on its thread.
// Lifetime: after CloseAll nothing on the thread refers to the worker (closures that
// reap closed connections hold the connection set, not the worker), so it may then be
// destroyed from any thread.
#ifndef FARM_RESP_RESP_SERVER_WORKER_H_
#define FARM_RESP_RESP_SERVER_WORKER_H_

#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "farm/api/farm.h"
#include "farm/api/unique_fd.h"
#include "resp/output_flusher.h"
#include "resp/protocol_session.h"
#include "resp/resp_connection.h"
#include "resp/resp_counters.h"
#include "resp/socket_watcher.h"

namespace farm::resp {

class RespServerWorker {
 public:
  // `info` holds what every session of this thread is told (its client_id is set per
  // connection); info.counters must point at the server's counters.
  RespServerWorker(Context* ctx, SessionFactory factory, SessionInfo info);
  ~RespServerWorker();

  Context* context() const { return ctx_; }

  // --- Loop thread ---
  absl::Status Init();
  // Serves a connection accepted on threads[0] (already counted as open).
  void Adopt(UniqueFd fd, uint64_t client_id);
  // Closes every connection and stops watching; later Adopts just close their socket.
  void CloseAll();

 private:
  using ConnectionSet = absl::flat_hash_map<RespConnection*, std::unique_ptr<RespConnection>>;

  void OnClosed(RespConnection* connection);

  Context* const ctx_;
  const SessionFactory factory_;
  const SessionInfo info_;
  std::unique_ptr<SocketWatcher> watcher_;
  std::shared_ptr<OutputFlusher> flusher_;
  std::shared_ptr<ConnectionSet> connections_ = std::make_shared<ConnectionSet>();
  bool stopped_ = false;
};

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_SERVER_WORKER_H_
