// GraphCommandExtension: the graph's NODE.* and LINK.* commands answered on another
// service's RESP port (resp/command_extension.h): farm_node --services=kv,graph serves
// both command sets on the node's one RESP port, the kv sessions handing the graph's
// commands here. The connection commands (PING, QUIT, ...) stay the host's.
//
// Lifecycle: made with the node's thread count before anything serves; Open publishes
// each worker thread's GraphStore once the graph is open, Close withdraws them. Until
// Open and after Close a graph command answers "-ERR the graph service is not open on
// this node", never touching a store.
//
// Threads: Run on worker thread t uses thread t's store only (its contract is
// GraphStore's: one thread, continuations there). Open and Close from any thread; the
// stores must stay alive until every operation a Run started has called back.
#ifndef FARM_GRAPH_RESP_GRAPH_COMMAND_EXTENSION_H_
#define FARM_GRAPH_RESP_GRAPH_COMMAND_EXTENSION_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "graph/store.h"
#include "resp/command_extension.h"

namespace farm::graph {

class GraphCommandExtension final : public ::farm::resp::CommandExtension {
 public:
  explicit GraphCommandExtension(size_t threads);

  void Open(const std::function<GraphStore*(size_t thread)>& store_of);
  void Close();

  absl::string_view service() const override { return "graph"; }
  // NODE.* and LINK.* (the commands that use the store).
  bool Handles(absl::string_view name) const override;
  void Run(size_t thread, uint64_t connection, absl::Span<std::string> args,
           absl::AnyInvocable<void(std::string reply)> done) override;

 private:
  const size_t threads_;
  const std::unique_ptr<std::atomic<GraphStore*>[]> stores_;
  // LINK.LOAD's per-connection token (GraphSessionOptions::load_token), salted so that
  // it differs from the graph's own server's and between restarts.
  const uint64_t salt_;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_COMMAND_EXTENSION_H_
