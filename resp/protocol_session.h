// ProtocolSession: one client's conversation as a RESP connection drives it — bytes in,
// replies out — whatever the service behind it (the kv store's RespSession, the graph
// service's). The connection (resp_connection.h) feeds what it reads, writes output()
// and consumes what was sent, reads only while wants_input(), and closes once
// close_requested() and the output is written.
//
// Contract for implementations:
//   1. Everything on the connection's thread; on_progress runs there too, never inside
//      Feed, EndOfInput or ConsumeOutput (the owner looks after those calls itself).
//   2. Replies appear in output() in the order of the requests.
//   3. wants_input() false is back-pressure: the owner stops reading until on_progress.
//   4. After EndOfInput the session finishes what was sent, then requests the close.
#ifndef FARM_RESP_PROTOCOL_SESSION_H_
#define FARM_RESP_PROTOCOL_SESSION_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "resp/resp_counters.h"

namespace farm::resp {

class ProtocolSession {
 public:
  virtual ~ProtocolSession() = default;

  // Called after work that completed later appended output, made the session want
  // input again, or requested the close.
  virtual void set_on_progress(absl::AnyInvocable<void()> on_progress) = 0;
  // Bytes received from the client. Ignored once closing.
  virtual void Feed(absl::string_view bytes) = 0;
  // The client will send nothing more.
  virtual void EndOfInput() = 0;
  // Replies not yet consumed.
  virtual absl::string_view output() const = 0;
  // The first n bytes of output() were sent.
  virtual void ConsumeOutput(size_t n) = 0;
  // Whether the owner should read more input now.
  virtual bool wants_input() const = 0;
  // Write out output(), then close the connection.
  virtual bool close_requested() const = 0;
};

// What the server tells a new session about its connection and itself.
struct SessionInfo {
  size_t thread = 0;          // the worker thread (index into the server's contexts)
  uint64_t client_id = 0;     // unique per server, from 1 (CLIENT ID)
  uint16_t port = 0;          // the server's port (INFO, CONFIG GET)
  uint64_t max_clients = 0;   // the server's limit (INFO, CONFIG GET)
  RespCounters* counters = nullptr;  // the server's; outlives every session
};

// Makes the session of a newly accepted connection, on its worker thread.
using SessionFactory = std::function<std::shared_ptr<ProtocolSession>(const SessionInfo& info)>;

}  // namespace farm::resp

#endif  // FARM_RESP_PROTOCOL_SESSION_H_
