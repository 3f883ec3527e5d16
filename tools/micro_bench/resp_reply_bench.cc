// Micro-benchmarks (Google Benchmark) of RESP reply encoding, one thread: the graph
// service's LINK.RANGE reply (graph/resp/graph_replies.h) for lists of 10, 480 (a
// LinkBench list at 2k nodes) and 10,000 links (its range limit), encoded into a fresh
// string as a store operation's reply is; and a run of integer replies.
//
//   resp_reply_bench [--benchmark_filter=...]
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "graph/resp/graph_replies.h"
#include "graph/types.h"
#include "resp/resp_writer.h"

namespace farm {
namespace {

// Links as LinkBench makes them: data log-normal, median 8 B, sigma 1, at most 254 B;
// times in milliseconds, newest first.
std::vector<graph::Link> LinkBenchList(size_t n) {
  std::mt19937_64 rng(7);
  std::lognormal_distribution<double> size(2.079, 1.0);  // ln 8
  std::vector<graph::Link> links(n);
  for (size_t i = 0; i < n; ++i) {
    graph::Link& l = links[i];
    l.id1 = 123456;
    l.type = 123456789;
    l.id2 = static_cast<int64_t>(rng() % 10'000'000);
    l.version = 0;
    l.time = 1'700'000'000'000 - static_cast<int64_t>(i) * 1000;
    l.data.assign(std::min<size_t>(254, static_cast<size_t>(size(rng))), 'x');
  }
  return links;
}

void BM_LinkRangeReply(benchmark::State& state) {
  const std::vector<graph::Link> links = LinkBenchList(static_cast<size_t>(state.range(0)));
  size_t bytes = 0;
  for (auto _ : state) {
    std::string reply;
    resp::RespWriter w(&reply);
    graph::WriteLinks(links, w);
    bytes += reply.size();
    benchmark::DoNotOptimize(reply.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_LinkRangeReply)->Arg(10)->Arg(480)->Arg(10000);

void BM_IntegerReplies(benchmark::State& state) {
  std::string out;
  int64_t v = 1'700'000'000'000;
  for (auto _ : state) {
    out.clear();
    resp::RespWriter w(&out);
    for (int i = 0; i < 64; ++i) w.Integer(v + i);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(state.iterations() * 64);
}
BENCHMARK(BM_IntegerReplies);

}  // namespace
}  // namespace farm

BENCHMARK_MAIN();
