// CommandExtension: the commands of another service, answered in a service's RESP
// sessions, so that one port serves every service of a node (farm_node
// --services=kv,graph: the graph's NODE.* and LINK.* on the kv service's port).
//
// Contract:
//   - Handles(name) is stateless and may be called from any thread. The host session
//     asks only for names it does not know itself, so its own commands always win.
//   - Run is called on worker thread `thread` of the node, the session's. `args` (the
//     command's name first) are valid during the call only; the extension may move
//     from them. `done` gets one whole RESP reply (an error reply for bad arguments
//     too), exactly once, on that thread, and may run inside Run. The extension must
//     outlive the sessions that use it and the operations it started, whose
//     continuations must tolerate a session gone (the host's `done` does).
//   - `connection` identifies the client connection uniquely among the extension's
//     callers (the extension may keep per-connection state by it, e.g. a load token).
//
// The host session runs an extension command as an exclusive one: after every earlier
// command of the connection has replied, holding back every later one, so a connection
// sees its own writes across services. Extension commands are not queued by MULTI.
#ifndef FARM_RESP_COMMAND_EXTENSION_H_
#define FARM_RESP_COMMAND_EXTENSION_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::resp {

class CommandExtension {
 public:
  virtual ~CommandExtension() = default;

  // The service's name, for error replies ("graph").
  virtual absl::string_view service() const = 0;
  // Whether `name` (any case) is one of the extension's commands.
  virtual bool Handles(absl::string_view name) const = 0;
  virtual void Run(size_t thread, uint64_t connection, absl::Span<std::string> args,
                   absl::AnyInvocable<void(std::string reply)> done) = 0;
};

}  // namespace farm::resp

#endif  // FARM_RESP_COMMAND_EXTENSION_H_
