// Micro-benchmarks (Google Benchmark) of the fabric's CPU paths, one process:
// a one-sided READ over shm (post + poll) against memcpy from the same kind of mapping,
// on a hot block and at random offsets of a large region; and the torn-checking copy.
//
//   fabric_micro_bench [--benchmark_filter=...]
#include <cstring>
#include <memory>

#include "benchmark/benchmark.h"
#include "farm/base/cpu_copy.h"
#include "farm/fabric/fabric.h"
#include "tools/fabric_bench/bench_protocol.h"
#include "tools/fabric_bench/bench_support.h"

namespace farm {
namespace {

constexpr uint64_t kRegionBytes = 256u << 20;

struct ShmPair {
  std::unique_ptr<Region> region, buffer;  // outlive the fabrics that registered them
  std::unique_ptr<Fabric> target, initiator;
  RegionCapability cap;
  LocalRegion local;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<Endpoint> ep;

  ShmPair() {
    target = *Fabric::Create(bench::BenchFabricOptions("shm"));
    (void)target->Listen([](absl::string_view) { return AcceptResult{}; });
    region = std::make_unique<Region>(*Region::Create(1, kRegionBytes));
    for (uint64_t i = 0; i < kRegionBytes; i += 4096) region->base()[i] = 1;
    cap = target->RegisterRegion(*region)->capability;
    initiator = *Fabric::Create(bench::BenchFabricOptions("shm"));
    buffer = std::make_unique<Region>(*Region::Create(kFirstPrivateRegion, 1 << 20));
    local = initiator->RegisterRegion(*buffer)->local;
    cq = *initiator->CreateCompletionQueue();
    ep = std::move(initiator->Connect(target->locator(), "", cq.get(), 0)->endpoint);
  }
};

ShmPair& Pair() {
  static ShmPair* pair = new ShmPair();  // one per process; benchmarks run sequentially
  return *pair;
}

void ReadOnce(ShmPair& p, WorkRequest& wr, uint64_t offset) {
  wr.remote_offset = offset;
  if (!p.ep->Post(wr).ok()) std::abort();
  Completion c;
  while (p.cq->Poll(absl::MakeSpan(&c, 1)) == 0) {
  }
  benchmark::DoNotOptimize(c);
}

void BM_ShmRead(benchmark::State& state) {
  ShmPair& p = Pair();
  const auto size = static_cast<uint32_t>(state.range(0));
  const bool random = state.range(1) != 0;
  WorkRequest wr;
  wr.opcode = Opcode::kRead;
  wr.local = p.local.base;
  wr.length = size;
  wr.lkey = p.local.lkey;
  wr.remote = &p.cap;
  bench::RandomOffsets offsets(kRegionBytes, size);
  for (auto _ : state) ReadOnce(p, wr, random ? offsets.Next() : 4096);
  state.SetItemsProcessed(state.iterations());
}

void BM_Memcpy(benchmark::State& state) {
  ShmPair& p = Pair();
  const auto size = static_cast<uint32_t>(state.range(0));
  const bool random = state.range(1) != 0;
  bench::RandomOffsets offsets(kRegionBytes, size);
  char dst[8192];
  for (auto _ : state) {
    std::memcpy(dst, p.region->base() + (random ? offsets.Next() : 4096), size);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_ReadWithTornCheck(benchmark::State& state) {
  ShmPair& p = Pair();
  const auto size = static_cast<uint32_t>(state.range(0));
  const bool random = state.range(1) != 0;
  bench::RandomOffsets offsets(kRegionBytes, size);
  char dst[8192];
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        ReadWithTornCheck(dst, p.region->base() + (random ? offsets.Next() : 4096), size));
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_OrderedStoreCopy(benchmark::State& state) {
  ShmPair& p = Pair();
  const auto size = static_cast<uint32_t>(state.range(0));
  const bool random = state.range(1) != 0;
  bench::RandomOffsets offsets(kRegionBytes, size);
  char src[8192] = {1};
  for (auto _ : state) {
    OrderedStoreCopy(p.region->base() + (random ? offsets.Next() : 4096), src, size);
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations());
}

// {size, random offsets?}
BENCHMARK(BM_OrderedStoreCopy)->ArgsProduct({{64, 544, 4096}, {0, 1}});
BENCHMARK(BM_ShmRead)->ArgsProduct({{64, 512, 4096}, {0, 1}});
BENCHMARK(BM_Memcpy)->ArgsProduct({{64, 512, 4096}, {0, 1}});
BENCHMARK(BM_ReadWithTornCheck)->ArgsProduct({{64, 512, 4096}, {0, 1}});

}  // namespace
}  // namespace farm

BENCHMARK_MAIN();
