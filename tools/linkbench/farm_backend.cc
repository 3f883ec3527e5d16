#include "tools/linkbench/farm_backend.h"

#include "absl/time/clock.h"

#include <atomic>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"
#include "graph/graph_node.h"
#include "tools/common/compute_member.h"

namespace farm::linkbench {
namespace {

// One blocking call: `op` runs on worker thread t with t's client; the caller waits
// until the continuation it was given has run (on that thread).
template <typename T, typename Op>
T RunOn(Host& host, graph::GraphNode& graph, size_t t, Op op) {
  Notification done;
  std::optional<T> result;
  host.context(t).Post([&] {
    op(graph.client(t), [&](T r) {
      result.emplace(std::move(r));
      done.Notify();
    });
  });
  done.WaitForNotification();
  return std::move(*result);
}

class FarmConnection final : public Connection {
 public:
  FarmConnection(Host& host, graph::GraphNode& graph, size_t thread)
      : host_(host),
        graph_(graph),
        t_(thread),
        load_token_((static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^ reinterpret_cast<uintptr_t>(this)) | 1) {}

  absl::StatusOr<int64_t> AddNode(graph::Node node) override {
    return Run<absl::StatusOr<int64_t>>(
        [&](graph::GraphClient& c, auto done) { c.AddNode(std::move(node), std::move(done)); });
  }
  absl::StatusOr<std::vector<int64_t>> AddNodes(std::vector<graph::Node> nodes) override {
    if (nodes.empty()) return std::vector<int64_t>();
    const size_t n = nodes.size();
    absl::StatusOr<int64_t> first = Run<absl::StatusOr<int64_t>>(
        [&](graph::GraphClient& c, auto done) { c.AddNodes(std::move(nodes), std::move(done)); });
    if (!first.ok()) return first.status();
    std::vector<int64_t> ids(n);
    for (size_t i = 0; i < n; ++i) ids[i] = *first + static_cast<int64_t>(i);  // consecutive (store.h)
    return ids;
  }
  absl::StatusOr<std::optional<graph::Node>> GetNode(int64_t id, int32_t type) override {
    return Run<absl::StatusOr<std::optional<graph::Node>>>(
        [&](graph::GraphClient& c, auto done) { c.GetNode(id, type, std::move(done)); });
  }
  absl::StatusOr<bool> UpdateNode(graph::Node node) override {
    return Run<absl::StatusOr<bool>>(
        [&](graph::GraphClient& c, auto done) { c.UpdateNode(std::move(node), std::move(done)); });
  }
  absl::StatusOr<bool> DeleteNode(int64_t id, int32_t type) override {
    return Run<absl::StatusOr<bool>>(
        [&](graph::GraphClient& c, auto done) { c.DeleteNode(id, type, std::move(done)); });
  }
  absl::Status ResetNodeIds(int64_t start_id) override {
    return Run<absl::Status>(
        [&](graph::GraphClient& c, auto done) { c.ResetNodeIds(start_id, std::move(done)); });
  }
  absl::StatusOr<bool> AddLink(graph::Link link) override {
    return Run<absl::StatusOr<bool>>(
        [&](graph::GraphClient& c, auto done) { c.AddLink(std::move(link), std::move(done)); });
  }
  absl::StatusOr<uint64_t> AddLinks(int64_t id1, int64_t type, std::vector<graph::Link> links) override {
    for (const graph::Link& l : links) {
      if (l.id1 != id1 || l.type != type) return absl::InvalidArgumentError("AddLinks: a link of another (id1, type)");
    }
    if (links.empty()) return 0;
    const uint64_t n = links.size();
    // The store answers the number of new links; the driver counts the links stored
    // (all of them: on a store loaded before, upserts of the same links).
    absl::StatusOr<uint64_t> added = Run<absl::StatusOr<uint64_t>>([&](graph::GraphClient& c, auto done) {
      c.LoadLinks(id1, type, std::move(links), load_token_, std::move(done));
    });
    if (!added.ok()) return added.status();
    return n;
  }
  absl::StatusOr<uint64_t> AddLinkLists(std::vector<graph::LinkList> lists) override {
    uint64_t n = 0;
    for (const graph::LinkList& list : lists) {
      for (const graph::Link& l : list.links) {
        if (l.id1 != list.id1 || l.type != list.type) {
          return absl::InvalidArgumentError("AddLinkLists: a link of another (id1, type)");
        }
      }
      n += list.links.size();
    }
    if (n == 0) return 0;
    absl::StatusOr<uint64_t> added = Run<absl::StatusOr<uint64_t>>([&](graph::GraphClient& c, auto done) {
      c.LoadLinkLists(std::move(lists), load_token_, std::move(done));
    });
    if (!added.ok()) return added.status();
    return n;  // the links stored (as AddLinks)
  }
  absl::StatusOr<bool> DeleteLink(int64_t id1, int64_t type, int64_t id2, bool expunge) override {
    return Run<absl::StatusOr<bool>>(
        [&](graph::GraphClient& c, auto done) { c.DeleteLink(id1, type, id2, expunge, std::move(done)); });
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinks(int64_t id1, int64_t type,
                                                    absl::Span<const int64_t> id2s) override {
    return Run<absl::StatusOr<std::vector<graph::Link>>>(
        [&](graph::GraphClient& c, auto done) { c.GetLinks(id1, type, id2s, std::move(done)); });
  }
  absl::StatusOr<std::vector<graph::Link>> GetLinkList(const graph::LinkRange& range) override {
    return Run<absl::StatusOr<std::vector<graph::Link>>>(
        [&](graph::GraphClient& c, auto done) { c.GetLinkList(range, std::move(done)); });
  }
  absl::StatusOr<uint64_t> CountLinks(int64_t id1, int64_t type) override {
    return Run<absl::StatusOr<uint64_t>>(
        [&](graph::GraphClient& c, auto done) { c.CountLinks(id1, type, std::move(done)); });
  }

 private:
  template <typename T, typename Op>
  T Run(Op op) {
    return RunOn<T>(host_, graph_, t_, [&](graph::GraphClient& c, graph::Done<T> done) { op(c, std::move(done)); });
  }

  Host& host_;
  graph::GraphNode& graph_;
  const size_t t_;
  const uint64_t load_token_;  // this loader's (GraphStore::LoadLinks)
};

class FarmBackend final : public Backend {
 public:
  FarmBackend(tools::ComputeMemberOptions options, std::unique_ptr<tools::ComputeMember> member,
              std::unique_ptr<graph::GraphNode> graph)
      : options_(std::move(options)), member_(std::move(member)), graph_(std::move(graph)) {}
  ~FarmBackend() override {
    graph_.reset();  // its clients go on their threads, before the member stops
    member_->Leave();
  }

  std::string Describe() const override {
    return absl::StrCat("farm (the graph, Tao on FaRM, of cluster ", options_.cluster, " via ZooKeeper ",
                        options_.zookeeper, ": ", data_members_, " data members; this process a compute-only member ",
                        member_->host().self(), " with ", options_.threads, " worker threads, fabric ",
                        options_.fabric, ")");
  }

  absl::StatusOr<std::unique_ptr<Connection>> Connect() override {
    const size_t t = next_thread_.fetch_add(1, std::memory_order_relaxed) % graph_->threads();
    return std::make_unique<FarmConnection>(member_->host(), *graph_, t);
  }

  void StartMeasuring() override { since_ = Counters(); }

  std::vector<std::string> Summary() override {
    Totals measured = Counters();
    measured.Subtract(since_);
    const graph::ReaderStats& r = measured.reader;
    const graph::ClientStats& c = measured.client;
    auto per_op = [&](uint64_t n) { return r.ops > 0 ? static_cast<double>(n) / r.ops : 0.0; };
    return {
        absl::StrFormat("lock-free ops %d, READs per op %.3f (object READs %.3f, index lookups %.3f), restarts %d",
                        r.ops, per_op(r.object_reads + r.index_lookups), per_op(r.object_reads),
                        per_op(r.index_lookups), r.restarts),
        absl::StrFormat("transactions %d, retries %d, shipped list pages %d (this member's, in the measured requests)",
                        c.transactions, c.retries, c.shipped_pages),
    };
  }

  void set_data_members(size_t n) { data_members_ = n; }

 private:
  const tools::ComputeMemberOptions options_;
  std::unique_ptr<tools::ComputeMember> member_;
  std::unique_ptr<graph::GraphNode> graph_;
  // The graph clients' counters, summed over the member's threads.
  struct Totals {
    graph::ReaderStats reader;
    graph::ClientStats client;
    void Subtract(const Totals& o) {
      reader.ops -= o.reader.ops;
      reader.object_reads -= o.reader.object_reads;
      reader.index_lookups -= o.reader.index_lookups;
      reader.restarts -= o.reader.restarts;
      client.transactions -= o.client.transactions;
      client.retries -= o.client.retries;
      client.shipped_pages -= o.client.shipped_pages;
    }
  };
  Totals Counters() {
    Totals sum;
    for (size_t t = 0; t < graph_->threads(); ++t) {
      RunOnThread(member_->host(), t, [&, t](Context&) {
        const graph::ReaderStats& rs = graph_->client(t).reader_stats();
        const graph::ClientStats& cs = graph_->client(t).stats();
        sum.reader.ops += rs.ops;
        sum.reader.object_reads += rs.object_reads;
        sum.reader.index_lookups += rs.index_lookups;
        sum.reader.restarts += rs.restarts;
        sum.client.transactions += cs.transactions;
        sum.client.retries += cs.retries;
        sum.client.shipped_pages += cs.shipped_pages;
      });
    }
    return sum;
  }

  std::atomic<size_t> next_thread_{0};
  size_t data_members_ = 0;
  Totals since_;  // the counters when the measured requests started
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> OpenFarmBackend(const BackendOptions& options) {
  tools::ComputeMemberOptions o;
  o.zookeeper = options.Get("zookeeper");
  o.cluster = options.Get("cluster", "farm");
  o.secret_file = options.Get("secret_file");
  o.fabric = options.Get("fabric", "auto");
  o.listen = options.Get("listen", "127.0.0.1:0");
  if (o.zookeeper.empty()) {
    return absl::InvalidArgumentError("farm: needs the cluster's zookeeper (host:port; --zookeeper)");
  }
  if (o.secret_file.empty()) {
    return absl::InvalidArgumentError("farm: needs the cluster's secret_file (--secret_file)");
  }
  uint32_t threads = 0;
  if (!absl::SimpleAtoi(options.Get("threads", "2"), &threads) || threads < 1 || threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("farm: threads must be 1 to 64, not \"", options.Get("threads"), "\""));
  }
  o.threads = threads;

  std::unique_ptr<graph::GraphNode> graph;
  absl::StatusOr<std::unique_ptr<tools::ComputeMember>> member =
      tools::ComputeMember::Join(o, [&](Host& host) -> absl::Status {
        absl::StatusOr<std::unique_ptr<graph::GraphNode>> installed = graph::GraphNode::Install(host, {});
        if (!installed.ok()) return installed.status();
        graph = std::move(*installed);
        return absl::OkStatus();
      });
  if (!member.ok()) {
    graph.reset();
    return absl::Status(member.status().code(), absl::StrCat("farm: joining the cluster: ", member.status().message()));
  }
  absl::Status opened = graph->CreateShards();  // none on a compute-only member
  if (opened.ok()) opened = graph->Open();
  if (!opened.ok()) {
    graph.reset();
    (*member)->Leave();
    return absl::Status(opened.code(), absl::StrCat("farm: opening the graph: ", opened.message()));
  }
  size_t data_members = 0;
  RunOnThread((*member)->host(), 0, [&](Context& ctx) { data_members = ctx.members().size(); });
  auto backend = std::make_unique<FarmBackend>(std::move(o), std::move(*member), std::move(graph));
  backend->set_data_members(data_members);
  return backend;
}

}  // namespace farm::linkbench
