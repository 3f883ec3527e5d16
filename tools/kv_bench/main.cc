// kv_bench: the key-value tables' figures, by named benchmark (--benchmarks, in order):
//
//   layouts    every layout of --layouts side by side at each load factor of
//              --load_factors: fabric READs and bytes per lookup, lookups/s and
//              updates/s in-cluster, lookup p50/p99, owner CPU per update and space
//              utilisation (tools/kv_bench/layout_comparison.h);
//   h          the hopscotch table's READs per lookup and utilisation for each H of
//              --h, inline and out-of-line values (tools/kv_bench/hopscotch_figures.h);
//   churn      hopscotch: remove every key and put it back, for each H of --churn_h;
//   multiget   hopscotch: multi-get vs lookups one after another on tcp.
//
// Without --benchmarks: layouts when --layouts is given, else h, churn and multiget.
//
// Usage: kv_bench [--benchmarks=layouts,h,churn,multiget] [--layouts=hopscotch,linear,cuckoo]
//                 [--load_factors=0.5,0.7,0.9,0.95] [--slots=65536] [--seconds=1]
//                 [--h=2,4,6,8] [--buckets=20000] [--occupancy=0.9] [--batch=24]
//                 [--churn_h=2,8]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "farm/base/command_line.h"
#include "kv/table_layouts.h"
#include "tools/kv_bench/hopscotch_figures.h"
#include "tools/kv_bench/layout_comparison.h"

ABSL_FLAG(std::string, benchmarks, "",
          "benchmarks to run, in order: layouts, h, churn, multiget (empty: layouts when --layouts is given, "
          "else h,churn,multiget)");
ABSL_FLAG(std::string, layouts, "",
          "layouts: table layouts to compare (kv/table_layouts.h; empty: hopscotch,linear,chained,cuckoo)");
ABSL_FLAG(std::string, load_factors, "0.5,0.7,0.9,0.95", "layouts: pairs / slots to load to");
ABSL_FLAG(uint64_t, slots, 1 << 16, "layouts: pair slots of the table");
ABSL_FLAG(double, seconds, 1, "layouts: each throughput phase");
ABSL_FLAG(int, window, 32, "layouts: operations in flight in the throughput phases");
ABSL_FLAG(std::string, fabric, "shm", "layouts: fabric backend, shm or tcp");
ABSL_FLAG(uint32_t, replication, 1, "layouts: copies of each region");
ABSL_FLAG(std::string, h, "2,4,6,8", "h: neighbourhood sizes H to measure");
ABSL_FLAG(uint64_t, buckets, 20000, "h, churn: buckets in the table");
ABSL_FLAG(double, occupancy, 0.9, "h, churn: pairs / bucket slots to fill to");
ABSL_FLAG(uint32_t, batch, 24, "multiget: batch size");
ABSL_FLAG(uint32_t, batches, 2000, "multiget: batches to time");
ABSL_FLAG(std::string, churn_h, "2,8", "churn: neighbourhood sizes H");
ABSL_FLAG(std::string, dir, "/tmp/farm-kv-bench", "directory for the local clusters");

namespace farm::kv::bench {
namespace {

absl::StatusOr<std::vector<uint32_t>> Numbers(const std::string& flag, const std::string& list) {
  std::vector<uint32_t> out;
  for (absl::string_view item : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(item, &n)) return absl::InvalidArgumentError(absl::StrFormat("bad --%s entry '%s'", flag, item));
    out.push_back(n);
  }
  return out;
}

absl::Status RunLayouts() {
  LayoutComparisonOptions o;
  o.slots = absl::GetFlag(FLAGS_slots);
  o.phase = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  o.window = absl::GetFlag(FLAGS_window);
  o.fabric = absl::GetFlag(FLAGS_fabric);
  o.replication = absl::GetFlag(FLAGS_replication);
  o.dir = absl::GetFlag(FLAGS_dir);
  std::string names = absl::GetFlag(FLAGS_layouts);
  if (names.empty()) names = "hopscotch,linear,chained,cuckoo";
  std::vector<std::string> layouts = absl::StrSplit(names, ',', absl::SkipEmpty());
  for (const std::string& layout : layouts) {
    if (absl::Status s = ValidateLayout(layout); !s.ok()) return s;
  }
  std::vector<double> loads;
  for (absl::string_view item : absl::StrSplit(absl::GetFlag(FLAGS_load_factors), ',', absl::SkipEmpty())) {
    double d = 0;
    if (!absl::SimpleAtod(item, &d) || !(d > 0 && d < 1)) {
      return absl::InvalidArgumentError(absl::StrFormat("bad --load_factors entry '%s' (in (0, 1))", item));
    }
    loads.push_back(d);
  }
  PrintLayoutHeader(o);
  for (double load : loads) {
    for (const std::string& layout : layouts) {
      absl::StatusOr<LayoutRow> row = MeasureLayout(o, layout, load);
      if (!row.ok()) {
        return absl::Status(row.status().code(),
                            absl::StrFormat("%s at %.2f: %s", layout, load, row.status().message()));
      }
      PrintLayoutRow(*row);
    }
  }
  return absl::OkStatus();
}

HopscotchOptions HopscotchFlags() {
  HopscotchOptions o;
  o.buckets = absl::GetFlag(FLAGS_buckets);
  o.occupancy = absl::GetFlag(FLAGS_occupancy);
  o.batch = absl::GetFlag(FLAGS_batch);
  o.batches = absl::GetFlag(FLAGS_batches);
  o.dir = absl::GetFlag(FLAGS_dir);
  return o;
}

absl::Status RunH() {
  const HopscotchOptions o = HopscotchFlags();
  absl::StatusOr<std::vector<uint32_t>> hs = Numbers("h", absl::GetFlag(FLAGS_h));
  if (!hs.ok()) return hs.status();
  std::printf("hopscotch: %lu buckets, filled to %.0f%% of bucket slots, 16 B keys, 32 B values, 1 node\n",
              static_cast<unsigned long>(o.buckets), 100 * o.occupancy);
  std::printf("  %-3s %-12s %10s %10s %12s %14s %10s\n", "H", "values", "occupancy", "READs/lkp", "bytes/lkp",
              "utilisation", "overflow");
  for (uint32_t n : *hs) {
    for (bool inline_values : {true, false}) {
      absl::StatusOr<HLayoutResult> r = MeasureHopscotchLayout(o, n, inline_values);
      if (!r.ok()) return absl::Status(r.status().code(), absl::StrFormat("H=%u: %s", n, r.status().message()));
      std::printf("  %-3u %-12s %9.1f%% %10.3f %12.1f %13.1f%% %10lu\n", n, inline_values ? "inline" : "out of line",
                  100 * r->occupancy, r->reads_per_lookup, r->bytes_per_lookup, 100 * r->utilisation,
                  static_cast<unsigned long>(r->overflow_blocks));
    }
  }
  return absl::OkStatus();
}

absl::Status RunChurn() {
  const HopscotchOptions o = HopscotchFlags();
  absl::StatusOr<std::vector<uint32_t>> hs = Numbers("churn_h", absl::GetFlag(FLAGS_churn_h));
  if (!hs.ok()) return hs.status();
  std::printf("hopscotch: remove every key, then put every key back (1 node, 64 updates in flight):\n");
  for (uint32_t n : *hs) {
    absl::StatusOr<ChurnResult> r = MeasureChurn(o, n);
    if (!r.ok()) return absl::Status(r.status().code(), absl::StrFormat("H=%u: %s", n, r.status().message()));
    std::printf("  H=%-2u %8lu pairs, %7lu overflow blocks when full: %6.2f us per remove, %6.2f us per put\n", n,
                static_cast<unsigned long>(r->pairs), static_cast<unsigned long>(r->overflow_blocks), r->us_per_remove,
                r->us_per_put);
  }
  return absl::OkStatus();
}

absl::Status RunMultiGet() {
  std::printf("hopscotch: multi-get, 2 nodes on the tcp fabric, client on node 2 (about half the keys remote):\n");
  return MeasureMultiGet(HopscotchFlags());
}

}  // namespace
}  // namespace farm::kv::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "kv_bench: the key-value table layouts side by side, and the hopscotch table's READs per "
                         "lookup, space utilisation, removes and multi-get.");
  std::string benchmarks = absl::GetFlag(FLAGS_benchmarks);
  if (benchmarks.empty()) benchmarks = absl::GetFlag(FLAGS_layouts).empty() ? "h,churn,multiget" : "layouts";
  for (absl::string_view name : absl::StrSplit(benchmarks, ',', absl::SkipEmpty())) {
    absl::Status s;
    if (name == "layouts") {
      s = farm::kv::bench::RunLayouts();
    } else if (name == "h") {
      s = farm::kv::bench::RunH();
    } else if (name == "churn") {
      s = farm::kv::bench::RunChurn();
    } else if (name == "multiget") {
      s = farm::kv::bench::RunMultiGet();
    } else {
      std::fprintf(stderr, "kv_bench: unknown benchmark '%s' (layouts, h, churn, multiget)\n", std::string(name).c_str());
      return 2;
    }
    if (!s.ok()) {
      std::fprintf(stderr, "kv_bench: %s: %s\n", std::string(name).c_str(), s.ToString().c_str());
      return absl::IsInvalidArgument(s) ? 2 : 1;
    }
  }
  return 0;
}
