#include "tests/graph/graph_cluster.h"

#include <unistd.h>

#include <utility>

#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm::graph::testing {

absl::StatusOr<std::unique_ptr<GraphCluster>> GraphCluster::Start(const std::string& backend, int nodes,
                                                                  const std::string& name, uint32_t replication,
                                                                  ListIndexTuning list_index, uint32_t index_buckets) {
  InProcessClusterOptions o;
  o.backend = backend;
  o.nodes = nodes;
  o.rdma_devices = farm::testing::TestVerbsDevices();
  o.replication = replication;
  o.dir = ::testing::TempDir() + name + "_" + backend + "_" + std::to_string(::getpid());
  GraphOptions g;
  g.index_buckets_per_node = index_buckets;
  g.list_index = list_index;
  absl::StatusOr<std::unique_ptr<LocalGraphCluster>> local = LocalGraphCluster::Start(o, g);
  if (!local.ok()) return local.status();
  return std::unique_ptr<GraphCluster>(new GraphCluster(std::move(*local)));
}

absl::StatusOr<int64_t> GraphCluster::AddNode(NodeId on, Node node) {
  return Call<absl::StatusOr<int64_t>>(on, [node](GraphClient& c, auto f) mutable { c.AddNode(std::move(node), std::move(f)); });
}
absl::StatusOr<int64_t> GraphCluster::AddNodes(NodeId on, std::vector<Node> nodes) {
  return Call<absl::StatusOr<int64_t>>(on, [nodes](GraphClient& c, auto f) mutable { c.AddNodes(std::move(nodes), std::move(f)); });
}
absl::StatusOr<std::optional<Node>> GraphCluster::GetNode(NodeId on, int64_t id, int32_t type) {
  return Call<absl::StatusOr<std::optional<Node>>>(on, [=](GraphClient& c, auto f) { c.GetNode(id, type, std::move(f)); });
}
absl::StatusOr<bool> GraphCluster::UpdateNode(NodeId on, Node node) {
  return Call<absl::StatusOr<bool>>(on, [node](GraphClient& c, auto f) mutable { c.UpdateNode(std::move(node), std::move(f)); });
}
absl::StatusOr<bool> GraphCluster::DeleteNode(NodeId on, int64_t id, int32_t type) {
  return Call<absl::StatusOr<bool>>(on, [=](GraphClient& c, auto f) { c.DeleteNode(id, type, std::move(f)); });
}
absl::Status GraphCluster::ResetNodeIds(NodeId on, int64_t start) {
  return Call<absl::Status>(on, [=](GraphClient& c, auto f) { c.ResetNodeIds(start, std::move(f)); });
}
absl::StatusOr<bool> GraphCluster::AddLink(NodeId on, Link link) {
  return Call<absl::StatusOr<bool>>(on, [link](GraphClient& c, auto f) mutable { c.AddLink(std::move(link), std::move(f)); });
}
absl::StatusOr<uint64_t> GraphCluster::AddLinks(NodeId on, int64_t id1, int64_t type, std::vector<Link> links) {
  return Call<absl::StatusOr<uint64_t>>(on, [=, links = std::move(links)](GraphClient& c, auto f) mutable {
    c.AddLinks(id1, type, std::move(links), std::move(f));
  });
}
absl::StatusOr<uint64_t> GraphCluster::LoadLinkLists(NodeId on, std::vector<LinkList> lists, uint64_t load) {
  return Call<absl::StatusOr<uint64_t>>(on, [=, lists = std::move(lists)](GraphClient& c, auto f) mutable {
    c.LoadLinkLists(std::move(lists), load, std::move(f));
  });
}
absl::StatusOr<bool> GraphCluster::DeleteLink(NodeId on, int64_t id1, int64_t type, int64_t id2, bool expunge) {
  return Call<absl::StatusOr<bool>>(on, [=](GraphClient& c, auto f) { c.DeleteLink(id1, type, id2, expunge, std::move(f)); });
}
absl::StatusOr<std::vector<Link>> GraphCluster::GetLinks(NodeId on, int64_t id1, int64_t type, std::vector<int64_t> id2s) {
  return Call<absl::StatusOr<std::vector<Link>>>(on, [=, id2s = std::move(id2s)](GraphClient& c, auto f) {
    c.GetLinks(id1, type, id2s, std::move(f));
  });
}
absl::StatusOr<std::vector<Link>> GraphCluster::GetLinkList(NodeId on, LinkRange range) {
  return Call<absl::StatusOr<std::vector<Link>>>(on, [=](GraphClient& c, auto f) { c.GetLinkList(range, std::move(f)); });
}
absl::StatusOr<uint64_t> GraphCluster::CountLinks(NodeId on, int64_t id1, int64_t type) {
  return Call<absl::StatusOr<uint64_t>>(on, [=](GraphClient& c, auto f) { c.CountLinks(id1, type, std::move(f)); });
}

absl::StatusOr<ListSnapshot> GraphCluster::ReadList(NodeId on, int64_t id1, int64_t type) {
  return Call<absl::StatusOr<ListSnapshot>>(on, [=](GraphClient& c, auto f) { c.ReadList(id1, type, std::move(f)); });
}

NodeIdStats GraphCluster::TotalNodeIdStats() {
  NodeIdStats total;
  for (NodeId id = 1; id <= static_cast<NodeId>(graph_->size()); ++id) {
    const NodeIdStats s = graph_->graph(id).node_ids().stats();
    total.takes += s.takes;
    total.reservations += s.reservations;
    total.dropped += s.dropped;
    total.waits += s.waits;
  }
  return total;
}

ClientStats GraphCluster::TotalStats() {
  ClientStats total;
  for (NodeId id = 1; id <= static_cast<NodeId>(graph_->size()); ++id) {
    for (size_t t = 0; t < graph_->host(id).thread_count(); ++t) {
      absl::StatusOr<ClientStats> s = graph_->Run<absl::StatusOr<ClientStats>>(
          id, t, [](GraphClient& c, auto f) { f(c.stats()); });
      if (!s.ok()) continue;
      total.transactions += s->transactions;
      total.retries += s->retries;
      total.shipped_pages += s->shipped_pages;
      total.index_builds += s->index_builds;
      total.indexed_ops += s->indexed_ops;
      total.indexed_reads += s->indexed_reads;
    }
  }
  return total;
}

}  // namespace farm::graph::testing
