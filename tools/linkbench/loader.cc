#include "tools/linkbench/loader.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "tools/linkbench/progress_line.h"

namespace farm::linkbench {
namespace {

constexpr size_t kNodeBatch = 1024;  // LinkStoreMysql's bulk insert batch
// LinkBenchLoad's bulk load: a loader buffers links over id1s and hands the store
// (addBulkLinks, addBulkCounts) this many (bulkLoadBatchSize, LinkStoreMysql's 1024)
// at a time. Here a batch holds whole lists, from the one that reaches the size back:
// a list is never split (a store's load appends one list in order).
constexpr int64_t kLinkBatch = 1024;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

// The first error of the phase; later ones are dropped.
class FirstError {
 public:
  void Set(absl::Status st) {
    absl::MutexLock lock(&mu_);
    if (status_.ok()) status_ = std::move(st);
    failed_.store(true);
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  absl::Status Get() {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};
};

}  // namespace

std::vector<std::vector<graph::Link>> GenerateLinks(const WorkloadModel& model, JavaRandom& rng,
                                                     MotifGenerator& gen, int64_t id1, int64_t now_ms) {
  const LinkCounts& counts = model.counts();
  std::vector<std::vector<graph::Link>> lists(counts.link_type_count());
  for (int t = 0; t < counts.link_type_count(); ++t) {
    const int64_t type = counts.LinkType(t);
    const int64_t n = counts.ForType(id1, type);
    lists[t].reserve(n);
    for (int64_t j = 0; j < n; ++j) {
      graph::Link link;
      link.id1 = id1;
      link.type = type;
      link.visibility = graph::Visibility::kVisible;
      link.version = 0;
      link.id2 = counts.ChooseForLoad(rng, id1, j);
      const size_t size = model.LinkDataSize(rng);
      link.data = gen.Fill(rng, size);
      // Back to about 50 days: now - 2^31 ms + a random int (LinkBenchLoad).
      link.time = now_ms - (int64_t{1} << 31) + rng.NextInt();
      lists[t].push_back(std::move(link));
    }
  }
  return lists;
}

graph::Node GenerateNode(const WorkloadModel& model, JavaRandom& rng, MotifGenerator& gen, int32_t now_s) {
  graph::Node node;
  node.type = graph::kDefaultNodeType;
  node.version = 1;
  node.time = now_s;
  const size_t size = model.NodeDataSize(rng);
  node.data = gen.Fill(rng, size);
  return node;
}

int64_t ExpectedLinks(const WorkloadModel& model) {
  const Workload& w = model.workload();
  const LinkCounts& counts = model.counts();
  int64_t total = 0;
  for (int64_t id1 = w.startid1; id1 < w.maxid1; ++id1) {
    for (int t = 0; t < counts.link_type_count(); ++t) total += counts.ForType(id1, counts.LinkType(t));
  }
  return total;
}

absl::StatusOr<LoadResult> RunLoadPhase(Backend& backend, const WorkloadModel& model, const LoadOptions& options) {
  const Workload& w = model.workload();
  const int64_t ids = w.maxid1 - w.startid1;
  const int64_t chunks = (ids + options.chunk_size - 1) / options.chunk_size;
  // Seeds: the node loader's first, then one per chunk in id order.
  JavaRandom master(options.seed);
  const int64_t node_seed = master.NextLong();
  std::vector<int64_t> chunk_seeds(chunks);
  for (int64_t& s : chunk_seeds) s = master.NextLong();

  // Connections first, so a store that refuses them fails before any thread starts.
  std::vector<std::unique_ptr<Connection>> conns;
  for (int i = 0; i <= options.loaders; ++i) {
    absl::StatusOr<std::unique_ptr<Connection>> c = backend.Connect();
    if (!c.ok()) return c.status();
    conns.push_back(*std::move(c));
  }

  FirstError error;
  std::atomic<int64_t> next_chunk{0}, ids_done{0}, links_done{0}, nodes_done{0};
  std::atomic<int64_t> id_mismatches{0};
  std::atomic<int> running{options.loaders + 1};
  double node_seconds = 0;
  const auto start = std::chrono::steady_clock::now();

  std::vector<std::thread> threads;
  threads.emplace_back([&, conn = conns[0].get()] {
    const auto node_start = std::chrono::steady_clock::now();
    JavaRandom rng(node_seed);
    MotifGenerator gen(w.node_add);
    if (absl::Status st = conn->ResetNodeIds(w.startid1); !st.ok()) {
      error.Set(absl::Status(st.code(), absl::StrCat("resetting node ids: ", st.message())));
    }
    std::vector<graph::Node> batch;
    int64_t expected = w.startid1;
    for (int64_t id = w.startid1; id < w.maxid1 && !error.failed(); ++id) {
      batch.push_back(GenerateNode(model, rng, gen, static_cast<int32_t>(NowMs() / 1000)));
      if (batch.size() < kNodeBatch && id + 1 < w.maxid1) continue;
      const size_t n = batch.size();
      absl::StatusOr<std::vector<int64_t>> got = conn->AddNodes(std::move(batch));
      batch.clear();
      if (!got.ok()) {
        error.Set(absl::Status(got.status().code(), absl::StrCat("loading nodes at id ", expected, ": ",
                                                                 got.status().message())));
        break;
      }
      for (int64_t got_id : *got) id_mismatches += got_id != expected++;
      nodes_done += n;
    }
    node_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - node_start).count();
    --running;
  });
  for (int i = 0; i < options.loaders; ++i) {
    threads.emplace_back([&, conn = conns[i + 1].get()] {
      std::vector<graph::LinkList> batch;
      int64_t batched = 0;
      auto flush = [&] {
        if (batch.empty()) return;
        const int64_t first = batch.front().id1, last = batch.back().id1;
        absl::StatusOr<uint64_t> added = conn->AddLinkLists(std::move(batch));
        batch.clear();
        if (!added.ok()) {
          error.Set(absl::Status(added.status().code(), absl::StrCat("loading links of id1s ", first, "..", last,
                                                                     ": ", added.status().message())));
        } else {
          links_done += batched;
        }
        batched = 0;
      };
      while (!error.failed()) {
        const int64_t c = next_chunk++;
        if (c >= chunks) break;
        JavaRandom rng(chunk_seeds[c]);
        MotifGenerator gen(w.link_add);
        const int64_t begin = w.startid1 + c * options.chunk_size;
        const int64_t end = std::min(w.maxid1, begin + options.chunk_size);
        for (int64_t id1 = begin; id1 < end && !error.failed(); ++id1) {
          for (std::vector<graph::Link>& list : GenerateLinks(model, rng, gen, id1, NowMs())) {
            if (list.empty()) continue;
            const int64_t type = list.front().type;
            batched += static_cast<int64_t>(list.size());
            batch.push_back(graph::LinkList{id1, type, std::move(list)});
            if (batched >= kLinkBatch) flush();
          }
          ++ids_done;
        }
      }
      if (!error.failed()) flush();
      --running;
    });
  }

  ProgressLine progress(options.progress);
  auto line = [&] {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return absl::StrFormat("load: %3.0f%%  %d/%d ids, %d nodes, %d links, %.0f links/s, %.0f nodes/s",
                           100.0 * ids_done.load() / std::max<int64_t>(1, ids), ids_done.load(), ids,
                           nodes_done.load(), links_done.load(), links_done.load() / std::max(secs, 1e-9),
                           nodes_done.load() / std::max(secs, 1e-9));
  };
  while (running.load() > 0) {
    progress.Show(line());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (std::thread& t : threads) t.join();
  progress.Finish(line());
  if (error.failed()) return error.Get();

  LoadResult result;
  result.nodes = nodes_done.load();
  result.links = links_done.load();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.node_seconds = node_seconds;
  result.id_mismatches = id_mismatches.load();
  return result;
}

}  // namespace farm::linkbench
