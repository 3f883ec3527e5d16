// The layout comparison of kv_bench (--benchmarks=layouts): for each table layout and
// load factor, one fresh in-process cluster — `storage_nodes` nodes holding the table
// and one compute-only node whose thread drives it (so every lookup crosses the
// fabric) — loaded with 16 B keys and 32 B values to the load factor, then measured:
//
//   READs/hit, B/hit   fabric READs per lookup of a present key, from the platform's
//                      counter (the client thread's ObjectReaderStats: reads - local),
//                      and payload bytes the lookups read (the layout's LookupStats)
//   RTTs/hit           round trips on a hit's path (the layout's own counts: hopscotch's
//                      READs follow one another; a linear round's READs go together)
//   READs/miss         the same for keys never inserted (linear probes to an empty slot)
//                      (cuckoo: its one-sided READs are not ObjectReader's: READs and
//                      RTTs are its LookupStats reads, ITE and DTE READs one after another;
//                      every one crosses the fabric, the client holding no table)
//   lookups/s          hits, `window` in flight from the one client thread
//   p50, p99           hit latency with one lookup in flight
//   updates/s          overwrites of present keys, `window` in flight (shipped to the
//                      key's primary, run there as transactions; cuckoo: run by the
//                      client itself with one-sided READ, WRITE and CAS)
//   put p50            overwrite latency with one in flight
//   owner CPU/update   CPU time of the storage nodes' worker threads
//                      (CLOCK_THREAD_CPUTIME_ID) during the update phase / updates: an
//                      upper bound (it includes their event loops' polling)
//   utilisation        bytes of keys and values / bytes of table memory (a scan)
//   R                  linear: the read size of its model at the estimated load (or the
//                      fixed one)
//   chain              chained: pairs per bucket in use (Mercury's chain length, in
//                      pairs; its expansions keep it near 1); measured once the
//                      expansions the load started have ended
#ifndef FARM_TOOLS_KV_BENCH_LAYOUT_COMPARISON_H_
#define FARM_TOOLS_KV_BENCH_LAYOUT_COMPARISON_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace farm::kv::bench {

struct LayoutComparisonOptions {
  uint64_t slots = 1 << 16;  // pair slots of the whole table
  int storage_nodes = 2;
  std::string fabric = "shm";
  uint32_t replication = 1;
  absl::Duration phase = absl::Seconds(1);  // each throughput phase
  int window = 32;
  uint64_t latency_samples = 4000;
  std::string dir = "/tmp/farm-kv-bench";
};

struct LayoutRow {
  std::string layout;
  double load_factor = 0;  // asked for
  double occupancy = 0;    // pairs / slots, from the scan
  double reads_per_hit = 0;
  double round_trips_per_hit = 0;
  double bytes_per_hit = 0;
  double reads_per_miss = 0;
  double lookups_per_s = 0;
  double p50_us = 0;
  double p99_us = 0;
  double updates_per_s = 0;
  double put_p50_us = 0;
  double owner_cpu_us_per_update = 0;
  double utilisation = 0;
  double inserts_per_s = 0;  // while loading
  uint32_t read_size = 0;    // linear only
  double chain_length = 0;   // chained only: pairs / buckets in use
  std::string chained_reads;  // chained only: the reader's READs per hit by kind
};

absl::StatusOr<LayoutRow> MeasureLayout(const LayoutComparisonOptions& options, const std::string& layout,
                                        double load_factor);

void PrintLayoutHeader(const LayoutComparisonOptions& options);
void PrintLayoutRow(const LayoutRow& row);

}  // namespace farm::kv::bench

#endif  // FARM_TOOLS_KV_BENCH_LAYOUT_COMPARISON_H_
