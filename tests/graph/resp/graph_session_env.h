// GraphSessionEnv: GraphSessions over a MemoryGraph (through MemoryGraphStore and a
// FaultyGraphStore for injected errors) on an EventLoop the test thread drives by hand
// (RunOnce), so session tests are deterministic and need no threads.
#ifndef FARM_TESTS_GRAPH_RESP_GRAPH_SESSION_ENV_H_
#define FARM_TESTS_GRAPH_RESP_GRAPH_SESSION_ENV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/event/event_loop.h"
#include "farm/event/loop_context.h"
#include "farm/fabric/doorbell.h"
#include "graph/memory_graph.h"
#include "graph/resp/graph_session.h"
#include "tests/graph/resp/faulty_graph_store.h"

namespace farm::graph::testing {

class GraphSessionEnv {
 public:
  GraphSessionEnv();
  ~GraphSessionEnv();

  MemoryGraph& graph() { return graph_; }
  FaultyGraphStore& store() { return *faulty_; }
  EventLoop& loop() { return *loop_; }

  std::shared_ptr<GraphSession> NewSession(GraphSessionOptions options = {});
  // Runs the loop until an iteration does nothing; false on timeout.
  bool Drain(absl::Duration timeout = absl::Seconds(5));

  // Feeds `input` to `session`, drains, and returns the replies that came out (their
  // output is consumed). Fails the test if the output is not well-formed RESP.
  std::vector<std::string> Exchange(GraphSession& session, absl::string_view input);
  // One command given as words (sent as a multibulk request): its only reply.
  std::string Command(GraphSession& session, std::vector<std::string> words);

 private:
  MemoryGraph graph_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<LoopContext> context_;
  std::unique_ptr<MemoryGraphStore> memory_;
  std::unique_ptr<FaultyGraphStore> faulty_;
};

// Encodes words as a multibulk request.
std::string Multibulk(const std::vector<std::string>& words);

}  // namespace farm::graph::testing

#endif  // FARM_TESTS_GRAPH_RESP_GRAPH_SESSION_ENV_H_
