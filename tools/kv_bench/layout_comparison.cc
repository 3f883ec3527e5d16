#include "tools/kv_bench/layout_comparison.h"

#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "farm/api/node_host.h"
#include "kv/chained/chained_client.h"
#include "kv/chained/chained_node.h"
#include "kv/cuckoo/cuckoo_client.h"
#include "kv/linear/linear_client.h"
#include "kv/local_kv_cluster.h"
#include "tools/kv_bench/op_loop.h"

namespace farm::kv::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string Key(uint64_t i) { return absl::StrFormat("user%012d", i); }                   // 16 bytes
std::string Value(uint64_t i, int gen) { return absl::StrFormat("v%d-%029d", gen % 10, i); }  // 32 bytes

// The lock-free read counts of the host's thread t (lockFreeStats), read on that thread.
LockFreeStats ReaderStats(Host& host, size_t t) {
  LockFreeStats stats;
  RunOnThread(host, t, [&](Context& ctx) { stats = lockFreeStats(ctx); });
  return stats;
}

// CPU time of `host`'s worker threads, read on each.
double WorkerCpuSeconds(Host& host) {
  double total = 0;
  for (size_t t = 0; t < host.thread_count(); ++t) {
    RunOnThread(host, t, [&](Context&) {
      timespec ts;
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
      total += ts.tv_sec + ts.tv_nsec * 1e-9;
    });
  }
  return total;
}

// Runs an OpLoop of `op` on the client's thread and waits for it.
absl::StatusOr<LoopResult> RunLoop(LocalKvCluster& kv, NodeId client, OpLoop::Op op, int window, uint64_t count,
                                   absl::Duration limit, bool record) {
  return kv.Run<absl::StatusOr<LoopResult>>(
      client, 0,
      [op = std::move(op), window, count, limit, record](KvClient&, auto finish) mutable {
        OpLoop::Start(std::move(op), window, count, Clock::now() + absl::ToChronoNanoseconds(limit), record,
                      std::move(finish));
      },
      limit + absl::Minutes(5));
}

// A lookup of key i that must find Value(i, gen) (hits) or nothing (misses).
OpLoop::Op Lookups(KvClient* c, uint64_t keys, bool hits, uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [c, keys, hits, rng](uint64_t, absl::AnyInvocable<void(absl::Status)> done) {
    const uint64_t i = hits ? (*rng)() % keys : keys + (*rng)() % (keys + 1);
    c->Get(Key(i), [i, hits, done = std::move(done)](absl::StatusOr<std::optional<absl::string_view>> r) mutable {
      if (!r.ok()) return done(r.status());
      if (hits != r->has_value() || (hits && **r != Value(i, 0))) {
        return done(absl::InternalError(absl::StrCat("lookup of ", Key(i), ": wrong answer")));
      }
      done(absl::OkStatus());
    });
  };
}

OpLoop::Op Puts(KvClient* c, uint64_t keys, bool sequential, int gen, uint64_t seed) {
  auto rng = std::make_shared<std::mt19937_64>(seed);
  return [c, keys, sequential, gen, rng](uint64_t n, absl::AnyInvocable<void(absl::Status)> done) {
    const uint64_t i = sequential ? n : (*rng)() % keys;
    c->Update(OpKind::kPut, Key(i), Value(i, gen), 0, [done = std::move(done)](absl::StatusOr<KeyOpResult> r) mutable {
      done(FlattenOpResult(std::move(r)).status());
    });
  };
}

}  // namespace

absl::StatusOr<LayoutRow> MeasureLayout(const LayoutComparisonOptions& o, const std::string& layout,
                                        double load_factor) {
  InProcessClusterOptions cluster;
  cluster.backend = o.fabric;
  cluster.nodes = o.storage_nodes + 1;
  cluster.compute_only_nodes = 1;
  cluster.threads = 1;
  cluster.replication = o.replication;
  cluster.region_bytes = 256u << 20;
  cluster.capacity_bytes = 2048u << 20;
  cluster.dir = absl::StrCat(o.dir, "-layouts-", ::getpid());
  KvTableOptions table;
  table.layout = layout;
  table.table.buckets_per_node = o.slots / (table.table.layout.slots_per_bucket() * o.storage_nodes);
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> started = LocalKvCluster::Start(cluster, table);
  if (!started.ok()) return started.status();
  LocalKvCluster& kv = **started;
  const NodeId client = static_cast<NodeId>(o.storage_nodes + 1);
  KvClient* c = &kv.client(client);
  LayoutRow row;
  row.layout = layout;
  row.load_factor = load_factor;

  absl::StatusOr<TableScan> empty =
      kv.Run<absl::StatusOr<TableScan>>(client, 0, [](KvClient& k, auto finish) { k.Scan(std::move(finish)); });
  if (!empty.ok()) return empty.status();
  const uint64_t keys = static_cast<uint64_t>(load_factor * empty->bucket_slots);
  absl::StatusOr<LoopResult> load = RunLoop(kv, client, Puts(c, keys, true, 0, 1), 64, keys, absl::Minutes(20), false);
  if (!load.ok()) return load.status();
  row.inserts_per_s = load->per_second();

  // Chained: the expansions the load started run to their end before measuring.
  if (absl::Status s = kv.WaitForExpansions(); !s.ok()) return s;

  // Linear probing: the load estimate brought up to date before measuring.
  if (auto* lc = dynamic_cast<linear::LinearClient*>(c)) {
    const uint32_t groups = static_cast<uint32_t>(std::min<uint64_t>(4096, lc->map().slots() / lc->map().slots_per_group()));
    absl::Status sampled = kv.Run<absl::Status>(client, 0, [lc, groups](KvClient&, auto finish) {
      lc->reader().SampleLoad(groups, std::move(finish));
    });
    if (!sampled.ok()) return sampled;
  }

  // Hits and misses: fabric READs (the client node's counter) and the layout's bytes.
  auto* linear_client = dynamic_cast<linear::LinearClient*>(c);
  // Round trips on a lookup's path: linear probing's rounds (each one or more READs
  // issued together) and value READs; hopscotch's READs, one after another.
  auto round_trips = [&] {
    if (linear_client == nullptr) return c->lookup_stats().reads;
    const linear::ProbeStats& p = linear_client->reader().probe_stats();
    return p.rounds + p.value_reads;
  };
  auto* chained_client = dynamic_cast<chained::ChainedClient*>(c);
  for (bool hits : {true, false}) {
    const chained::ChainStats chain_before =
        chained_client != nullptr ? chained_client->reader().chain_stats() : chained::ChainStats{};
    const LockFreeStats fabric_before = ReaderStats(kv.host(client), 0);
    const LookupStats before = c->lookup_stats();
    const uint64_t trips_before = round_trips();
    absl::StatusOr<LoopResult> r = RunLoop(kv, client, Lookups(c, keys, hits, 2), o.window, 0, o.phase, false);
    if (!r.ok()) return r.status();
    const LockFreeStats fabric_after = ReaderStats(kv.host(client), 0);
    const LookupStats after = c->lookup_stats();
    const double lookups = static_cast<double>(after.lookups - before.lookups);
    double fabric_reads = static_cast<double>((fabric_after.reads - fabric_before.reads) -
                                              (fabric_after.local - fabric_before.local));
    if (dynamic_cast<cuckoo::CuckooClient*>(c) != nullptr) fabric_reads = after.reads - before.reads;
    if (chained_client != nullptr && hits) {
      const chained::ChainStats& ca = chained_client->reader().chain_stats();
      row.chained_reads = absl::StrFormat(
          "heads %.3f, blocks %.3f, rechecks %.3f, moved %.3f, roots %.3f, restarts %.3f per hit",
          (ca.head_reads - chain_before.head_reads) / lookups, (ca.block_reads - chain_before.block_reads) / lookups,
          (ca.recheck_reads - chain_before.recheck_reads) / lookups, (ca.next_table - chain_before.next_table) / lookups,
          (ca.root_reads - chain_before.root_reads) / lookups, (after.restarts - before.restarts) / lookups);
    }
    if (hits) {
      row.round_trips_per_hit = (round_trips() - trips_before) / lookups;
      row.lookups_per_s = r->per_second();
      row.reads_per_hit = fabric_reads / lookups;
      row.bytes_per_hit = (after.bytes_read - before.bytes_read) / lookups;
    } else {
      row.reads_per_miss = fabric_reads / lookups;
    }
  }
  absl::StatusOr<LoopResult> latency =
      RunLoop(kv, client, Lookups(c, keys, true, 3), 1, o.latency_samples, absl::Minutes(5), true);
  if (!latency.ok()) return latency.status();
  row.p50_us = latency->QuantileUs(0.5);
  row.p99_us = latency->QuantileUs(0.99);
  if (auto* lc = dynamic_cast<linear::LinearClient*>(c)) {
    absl::StatusOr<uint32_t> r = kv.Run<absl::StatusOr<uint32_t>>(
        client, 0, [lc](KvClient&, auto finish) { finish(lc->reader().read_size()); });
    if (!r.ok()) return r.status();
    row.read_size = *r;
  }

  // Updates (overwrites), with the owners' worker threads' CPU time around them.
  double cpu_before = 0;
  for (NodeId n = 1; n <= static_cast<NodeId>(o.storage_nodes); ++n) cpu_before += WorkerCpuSeconds(kv.host(n));
  absl::StatusOr<LoopResult> updates = RunLoop(kv, client, Puts(c, keys, false, 1, 4), o.window, 0, o.phase, false);
  if (!updates.ok()) return updates.status();
  double cpu_after = 0;
  for (NodeId n = 1; n <= static_cast<NodeId>(o.storage_nodes); ++n) cpu_after += WorkerCpuSeconds(kv.host(n));
  row.updates_per_s = updates->per_second();
  row.owner_cpu_us_per_update = (cpu_after - cpu_before) * 1e6 / static_cast<double>(updates->ops);
  absl::StatusOr<LoopResult> put_latency =
      RunLoop(kv, client, Puts(c, keys, false, 2, 5), 1, o.latency_samples, absl::Minutes(5), true);
  if (!put_latency.ok()) return put_latency.status();
  row.put_p50_us = put_latency->QuantileUs(0.5);

  absl::StatusOr<TableScan> scan =
      kv.Run<absl::StatusOr<TableScan>>(client, 0, [](KvClient& k, auto finish) { k.Scan(std::move(finish)); });
  if (!scan.ok()) return scan.status();
  if (scan->pairs != keys) {
    return absl::InternalError(absl::StrCat(layout, ": the table holds ", scan->pairs, " pairs, not ", keys));
  }
  row.occupancy = scan->occupancy();
  row.utilisation = scan->utilisation();
  if (absl::StartsWith(layout, "chained") && scan->buckets_in_use > 0) {
    row.chain_length = static_cast<double>(scan->pairs) / static_cast<double>(scan->buckets_in_use);
  }
  return row;
}

void PrintLayoutHeader(const LayoutComparisonOptions& o) {
  std::printf(
      "layouts: %llu pair slots on %d storage nodes (%s fabric, replication %u), 1 compute-only client node "
      "(1 thread, %d in flight; latency with 1), 16 B keys, 32 B values, %.1f s phases\n",
      static_cast<unsigned long long>(o.slots), o.storage_nodes, o.fabric.c_str(), o.replication, o.window,
      absl::ToDoubleSeconds(o.phase));
  std::printf("  %-14s %5s %6s %9s %8s %8s %9s %10s %7s %7s %10s %8s %10s %6s %4s %5s\n", "layout", "LF", "occ",
              "READs/hit", "RTTs/hit", "B/hit", "READs/miss", "lookups/s", "p50 us", "p99 us", "updates/s", "put p50",
              "CPU us/upd", "util", "R", "chain");
}

void PrintLayoutRow(const LayoutRow& r) {
  std::printf("  %-14s %5.2f %5.1f%% %9.2f %8.2f %8.0f %9.2f %10.0f %7.1f %7.1f %10.0f %8.1f %10.1f %5.1f%% %4s %5s\n",
              r.layout.c_str(), r.load_factor, 100 * r.occupancy, r.reads_per_hit, r.round_trips_per_hit,
              r.bytes_per_hit, r.reads_per_miss, r.lookups_per_s, r.p50_us, r.p99_us, r.updates_per_s, r.put_p50_us,
              r.owner_cpu_us_per_update, 100 * r.utilisation,
              r.read_size ? absl::StrCat(r.read_size).c_str() : "-",
              r.chain_length > 0 ? absl::StrFormat("%.2f", r.chain_length).c_str() : "-");
  if (!r.chained_reads.empty()) std::printf("  %-14s %5.2f   %s\n", "", r.load_factor, r.chained_reads.c_str());
  std::fflush(stdout);
}

}  // namespace farm::kv::bench
