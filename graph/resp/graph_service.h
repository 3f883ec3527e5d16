// GraphService: the graph as a service of a node (farm_node --services=graph, or a node
// of an in-process cluster): the graph on this node (graph/graph_node.h), its
// GraphClient per worker thread, and a RESP server of the NODE.* and LINK.* commands on
// the node's worker threads, so every node answers for every id — on a port of its own,
// or on another service's (command_extension()), or both.
//
//   auto graph = GraphService::Create(host, options);   // before the node starts
//   ServiceSet services(host); services.Add(std::move(*graph));
//   ... the node starts ...
//   services.StartAll();                                // index shards, open, RESP
//   services.StopAll();                                 // before the node stops
//
// The id index is opened through the cluster's catalog coordinator (kv/table_host.h,
// with the graph's own identity), so every node, including one that joins later,
// serves the same graph. Threads: Create, Start and Stop from a thread that is not one
// of the node's worker threads; Counters and OnConfiguration from any thread.
#ifndef FARM_GRAPH_RESP_GRAPH_SERVICE_H_
#define FARM_GRAPH_RESP_GRAPH_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/api/host.h"
#include "farm/api/service.h"
#include "graph/graph_node.h"
#include "graph/resp/graph_command_extension.h"
#include "graph/resp/graph_resp_server.h"

namespace farm::graph {

struct GraphServiceOptions {
  GraphOptions graph;
  // The graph's own RESP port (loopback, port 0 by default: logged). An empty listen
  // address: no port of its own — the commands are served through command_extension()
  // on another service's port (farm_node --services=kv,graph).
  GraphRespOptions resp;
};

class GraphService final : public Service {
 public:
  static absl::StatusOr<std::unique_ptr<GraphService>> Create(Host& host, GraphServiceOptions options);
  ~GraphService() override;  // Stop()

  std::string name() const override { return "graph"; }
  // Creates this machine's index shards, opens the graph, then serves RESP.
  absl::Status Start() override;
  // Stops serving RESP and drops the clients. Idempotent.
  void Stop() override;
  std::vector<std::pair<std::string, uint64_t>> Counters() const override;
  void OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) override;

  uint16_t resp_port() const { return server_ ? server_->port() : 0; }
  // NODE.* and LINK.* for another service's RESP sessions (kv::resp::KvRespOptions::
  // extension): open from Start until Stop, refusing the commands before and after.
  std::shared_ptr<GraphCommandExtension> command_extension() const { return extension_; }
  // After Start; on worker thread t only (in-cluster drivers).
  GraphClient& client(size_t t) { return graph_->client(t); }

 private:
  GraphService(Host& host, GraphServiceOptions options, std::unique_ptr<GraphNode> graph)
      : host_(host),
        options_(std::move(options)),
        graph_(std::move(graph)),
        extension_(std::make_shared<GraphCommandExtension>(host.thread_count())) {}

  Host& host_;
  const GraphServiceOptions options_;
  std::unique_ptr<GraphNode> graph_;
  const std::shared_ptr<GraphCommandExtension> extension_;
  std::unique_ptr<::farm::resp::RespServer> server_;
  std::atomic<uint64_t> epoch_{0};
  std::atomic<uint64_t> members_{0};
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_SERVICE_H_
