#include "graph/resp/graph_service.h"

#include <utility>

#include "farm/api/log.h"
#include "resp/redis_errors.h"

namespace farm::graph {

absl::StatusOr<std::unique_ptr<GraphService>> GraphService::Create(Host& host, GraphServiceOptions options) {
  absl::StatusOr<std::unique_ptr<GraphNode>> graph = GraphNode::Install(host, options.graph);
  if (!graph.ok()) return graph.status();
  return std::unique_ptr<GraphService>(new GraphService(host, std::move(options), std::move(*graph)));
}

GraphService::~GraphService() { Stop(); }

absl::Status GraphService::Start() {
  if (graph_ == nullptr) return absl::FailedPreconditionError("the graph service was stopped");
  if (absl::Status s = graph_->CreateShards(); !s.ok()) return s;
  if (absl::Status s = graph_->Open(); !s.ok()) return s;
  GraphNode* graph = graph_.get();
  extension_->Open([graph](size_t t) -> GraphStore* { return &graph->client(t); });
  if (options_.resp.listen.empty()) {
    FARM_LOG(kInfo, "node %u: graph: served on another service's RESP port", host_.self());
    return absl::OkStatus();
  }
  std::vector<Context*> threads;
  for (size_t t = 0; t < host_.thread_count(); ++t) threads.push_back(&host_.context(t));
  absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> server = StartGraphRespServer(
      threads, [graph](size_t t) -> GraphStore* { return &graph->client(t); }, options_.resp);
  if (!server.ok()) return server.status();
  server_ = std::move(*server);
  FARM_LOG(kInfo, "node %u: graph: RESP on %s port %u", host_.self(), options_.resp.listen, server_->port());
  return absl::OkStatus();
}

std::vector<std::pair<std::string, uint64_t>> GraphService::Counters() const {
  std::vector<std::pair<std::string, uint64_t>> counters = {
      {"configuration_epoch", epoch_.load(std::memory_order_relaxed)},
      {"configuration_members", members_.load(std::memory_order_relaxed)}};
  if (server_ == nullptr) return counters;
  for (auto& c : ::farm::resp::ServerCounters(*server_)) counters.push_back(std::move(c));
  return counters;
}

void GraphService::OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) {
  epoch_.store(epoch, std::memory_order_relaxed);
  members_.store(members.size(), std::memory_order_relaxed);
  FARM_LOG(kInfo, "node %u: graph: configuration %d with %d members", host_.self(), epoch, members.size());
}

void GraphService::Stop() {
  extension_->Close();
  if (server_ != nullptr) server_->Stop();
  server_.reset();
  graph_.reset();  // drops the clients on their threads
}

}  // namespace farm::graph
