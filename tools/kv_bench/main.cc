// kv_bench: the hashtable's layout figures (paper section 3.6) and multi-get.
//
//   reads per lookup   fill a table to --occupancy (default 90%) with 16-byte keys and
//                      32-byte values, then look every key up: object READs per lookup
//                      (the bucket pair is one READ), payload bytes per lookup, and space
//                      utilisation (bytes of pairs / bytes of memory), for each H in --h
//                      and for inline and out-of-line values;
//   multi-get          lookups of --batch keys issued together vs one after another, on
//                      a 2-node cluster (remote keys): time per batch;
//   removes            for each H in --churn_h: fill to --occupancy, remove every key,
//                      put every key back: time per remove and per put (1 node, shipped
//                      updates, 64 in flight), the cost of chain collapse.
//
// Usage: kv_bench [--h=2,4,6,8] [--buckets=20000] [--occupancy=0.9] [--batch=24]
//                 [--churn_h=2,8]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "farm/base/command_line.h"
#include "kv/local_kv_cluster.h"

ABSL_FLAG(std::string, h, "2,4,6,8", "neighbourhood sizes H to measure");
ABSL_FLAG(uint64_t, buckets, 20000, "buckets in the table");
ABSL_FLAG(double, occupancy, 0.9, "pairs / bucket slots to fill to");
ABSL_FLAG(uint32_t, batch, 24, "multi-get batch size");
ABSL_FLAG(uint32_t, batches, 2000, "multi-get batches to time");
ABSL_FLAG(std::string, churn_h, "2,8", "neighbourhood sizes H for the remove and re-insert timing");
ABSL_FLAG(std::string, dir, "/tmp/farm-kv-bench", "directory for the local cluster");

namespace farm::kv {
namespace {

std::string Key(uint64_t i) { return absl::StrFormat("user%012d", i); }
std::string Value(uint64_t i) { return absl::StrFormat("value-%026d", i); }  // 32 bytes

struct LayoutResult {
  double occupancy = 0;
  double reads_per_lookup = 0;
  double bytes_per_lookup = 0;
  double utilisation = 0;
  uint64_t overflow_blocks = 0;
};

// Puts (or removes) keys 0..count-1 from client (1, 0), kWindow at a time; deletes
// itself at the end.
template <typename Finish>
struct Loader {
  static constexpr uint64_t kWindow = 64;
  TableClient* c;
  uint64_t count;
  OpKind kind;
  Finish finish;
  uint64_t next = 0, done = 0;
  absl::Status error;
  void Start() {
    if (count == 0) return End();
    for (uint64_t i = 0; i < std::min(kWindow, count); ++i) Issue();
  }
  void Issue() {
    const uint64_t i = next++;
    c->Update(kind, Key(i), Value(i), 0, [this](absl::StatusOr<KeyOpResult> r) {
      if (error.ok() && !r.ok()) error = r.status();
      if (error.ok() && !r->status.ok()) error = r->status;
      if (error.ok() && kind == OpKind::kRemove && !r->existed) error = absl::InternalError("a loaded key was missing");
      if (++done == count) return End();
      if (next < count) Issue();
    });
  }
  void End() {
    Finish f = std::move(finish);
    const absl::Status e = error;
    delete this;
    f(e);
  }
};

absl::Status Load(LocalKvCluster& kv, uint64_t count, OpKind kind = OpKind::kPut) {
  return kv.Run<absl::Status>(
      1, 0,
      [count, kind](TableClient& c, auto finish) {
        (new Loader<decltype(finish)>{&c, count, kind, std::move(finish)})->Start();
      },
      absl::Minutes(10));
}

// One node with one thread and a table of --buckets buckets (the layout figures need
// no replication).
absl::StatusOr<std::unique_ptr<LocalKvCluster>> StartOneNode(TableOptions t, const std::string& name) {
  InProcessClusterOptions o;
  o.nodes = 1;
  o.threads = 1;
  o.replication = 1;
  o.region_bytes = 256u << 20;
  o.capacity_bytes = 1024u << 20;
  o.dir = absl::GetFlag(FLAGS_dir) + "-" + name;
  t.buckets_per_node = absl::GetFlag(FLAGS_buckets);
  return LocalKvCluster::Start(o, t);
}

absl::StatusOr<LayoutResult> MeasureLayout(uint32_t h, bool inline_values) {
  TableOptions t;
  t.layout.neighbourhood = h;
  t.layout.inline_value_bytes = inline_values ? 32 : 0;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = StartOneNode(t, "layout");
  if (!kv.ok()) return kv.status();
  const uint64_t slots = (*kv)->client(1).map().total_buckets() * t.layout.slots_per_bucket();
  const uint64_t pairs = static_cast<uint64_t>(slots * absl::GetFlag(FLAGS_occupancy));
  if (absl::Status s = Load(**kv, pairs); !s.ok()) return s;
  const LookupStats before = (*kv)->client(1).reader().stats();
  absl::Status looked = (*kv)->Run<absl::Status>(1, 0, [pairs](TableClient& c, auto finish) {
    auto remaining = std::make_shared<uint64_t>(pairs);
    auto shared = std::make_shared<decltype(finish)>(std::move(finish));
    auto error = std::make_shared<absl::Status>();
    for (uint64_t i = 0; i < pairs; ++i) {
      c.Get(Key(i), [i, remaining, shared, error](absl::StatusOr<std::optional<absl::string_view>> r) {
        if (error->ok() && (!r.ok() || !r->has_value() || **r != Value(i))) {
          *error = r.ok() ? absl::InternalError("a loaded key was not found with its value") : r.status();
        }
        if (--*remaining == 0) (*shared)(*error);
      });
    }
  }, absl::Minutes(10));
  if (!looked.ok()) return looked;
  const LookupStats after = (*kv)->client(1).reader().stats();
  absl::StatusOr<TableScan> scan =
      (*kv)->Run<absl::StatusOr<TableScan>>(1, 0, [](TableClient& c, auto finish) { c.Scan(std::move(finish)); });
  if (!scan.ok()) return scan.status();
  LayoutResult r;
  const double lookups = static_cast<double>(after.lookups - before.lookups);
  r.reads_per_lookup = (after.reads - before.reads) / lookups;
  r.bytes_per_lookup = (after.bytes_read - before.bytes_read) / lookups;
  r.occupancy = scan->occupancy();
  r.utilisation = scan->utilisation();
  r.overflow_blocks = scan->overflow_blocks;
  return r;
}

struct ChurnResult {
  uint64_t pairs = 0;
  uint64_t overflow_blocks = 0;  // when full
  double us_per_remove = 0;
  double us_per_put = 0;
};

absl::StatusOr<ChurnResult> MeasureChurn(uint32_t h) {
  TableOptions t;
  t.layout.neighbourhood = h;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = StartOneNode(t, "churn");
  if (!kv.ok()) return kv.status();
  ChurnResult r;
  r.pairs = static_cast<uint64_t>((*kv)->client(1).map().total_buckets() * t.layout.slots_per_bucket() *
                                  absl::GetFlag(FLAGS_occupancy));
  if (absl::Status s = Load(**kv, r.pairs); !s.ok()) return s;
  absl::StatusOr<TableScan> scan =
      (*kv)->Run<absl::StatusOr<TableScan>>(1, 0, [](TableClient& c, auto finish) { c.Scan(std::move(finish)); });
  if (!scan.ok()) return scan.status();
  r.overflow_blocks = scan->overflow_blocks;
  absl::Time start = absl::Now();
  if (absl::Status s = Load(**kv, r.pairs, OpKind::kRemove); !s.ok()) return s;
  r.us_per_remove = absl::ToDoubleMicroseconds(absl::Now() - start) / r.pairs;
  start = absl::Now();
  if (absl::Status s = Load(**kv, r.pairs); !s.ok()) return s;
  r.us_per_put = absl::ToDoubleMicroseconds(absl::Now() - start) / r.pairs;
  return r;
}

// Times `batches` batches of `batch` lookups, issued together (MultiGet) or one after
// another; deletes itself at the end.
template <typename Finish>
struct BatchRun {
  static constexpr uint64_t kKeys = 10000;
  TableClient* c;
  uint32_t batch, left;
  bool together;
  Finish finish;
  absl::Time start = absl::Now();
  uint64_t key = 0;
  std::vector<std::string> keys;

  void Next() {
    if (left-- == 0) return End(absl::Now() - start);
    keys.clear();
    for (uint32_t i = 0; i < batch; ++i) keys.push_back(Key(key++ % kKeys));
    if (!together) return One(0);
    c->MultiGet(keys, [this](absl::StatusOr<std::vector<std::optional<std::string>>> r) {
      if (!r.ok()) return End(r.status());
      Next();
    });
  }
  void One(uint32_t i) {
    if (i == batch) return Next();
    c->Get(keys[i], [this, i](absl::StatusOr<std::optional<absl::string_view>> r) {
      if (!r.ok()) return End(r.status());
      One(i + 1);
    });
  }
  void End(absl::StatusOr<absl::Duration> result) {
    Finish f = std::move(finish);
    delete this;
    f(std::move(result));
  }
};

absl::Status MeasureMultiGet() {
  InProcessClusterOptions o;
  o.backend = "tcp";  // real round trips (shm READs are memory copies)
  o.nodes = 2;
  o.threads = 1;
  o.replication = 1;
  o.dir = absl::GetFlag(FLAGS_dir) + "-multiget";
  TableOptions t;
  t.buckets_per_node = 4096;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = LocalKvCluster::Start(o, t);
  if (!kv.ok()) return kv.status();
  if (absl::Status s = Load(**kv, BatchRun<int>::kKeys); !s.ok()) return s;
  const uint32_t batch = absl::GetFlag(FLAGS_batch);
  const uint32_t batches = absl::GetFlag(FLAGS_batches);
  for (bool together : {false, true}) {
    absl::StatusOr<absl::Duration> took = (*kv)->Run<absl::StatusOr<absl::Duration>>(
        2, 0,
        [batch, batches, together](TableClient& c, auto finish) {
          (new BatchRun<decltype(finish)>{&c, batch, batches, together, std::move(finish)})->Next();
        },
        absl::Minutes(10));
    if (!took.ok()) return took.status();
    std::printf("  %-28s %8.1f us per batch of %u (%.2f us per key)\n",
                together ? "multi-get (issued together)" : "lookups one after another",
                absl::ToDoubleMicroseconds(*took) / batches, batch,
                absl::ToDoubleMicroseconds(*took) / batches / batch);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace farm::kv

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "kv_bench: the hashtable's READs per lookup, space utilisation, removes and multi-get.");
  std::printf("kv_bench: %lu buckets, filled to %.0f%% of bucket slots, 16 B keys, 32 B values, 1 node\n",
              static_cast<unsigned long>(absl::GetFlag(FLAGS_buckets)), 100 * absl::GetFlag(FLAGS_occupancy));
  std::printf("  %-3s %-12s %10s %10s %12s %14s %10s\n", "H", "values", "occupancy", "READs/lkp",
              "bytes/lkp", "utilisation", "overflow");
  for (absl::string_view h : absl::StrSplit(absl::GetFlag(FLAGS_h), ',')) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(h, &n)) {
      std::fprintf(stderr, "bad --h entry '%s'\n", std::string(h).c_str());
      return 2;
    }
    for (bool inline_values : {true, false}) {
      absl::StatusOr<farm::kv::LayoutResult> r = farm::kv::MeasureLayout(n, inline_values);
      if (!r.ok()) {
        std::fprintf(stderr, "H=%u: %s\n", n, r.status().ToString().c_str());
        return 1;
      }
      std::printf("  %-3u %-12s %9.1f%% %10.3f %12.1f %13.1f%% %10lu\n", n,
                  inline_values ? "inline" : "out of line", 100 * r->occupancy, r->reads_per_lookup,
                  r->bytes_per_lookup, 100 * r->utilisation, static_cast<unsigned long>(r->overflow_blocks));
    }
  }
  std::printf("remove every key, then put every key back (1 node, 64 updates in flight):\n");
  for (absl::string_view h : absl::StrSplit(absl::GetFlag(FLAGS_churn_h), ',')) {
    uint32_t n = 0;
    if (!absl::SimpleAtoi(h, &n)) {
      std::fprintf(stderr, "bad --churn_h entry '%s'\n", std::string(h).c_str());
      return 2;
    }
    absl::StatusOr<farm::kv::ChurnResult> r = farm::kv::MeasureChurn(n);
    if (!r.ok()) {
      std::fprintf(stderr, "H=%u: %s\n", n, r.status().ToString().c_str());
      return 1;
    }
    std::printf("  H=%-2u %8lu pairs, %7lu overflow blocks when full: %6.2f us per remove, %6.2f us per put\n", n,
                static_cast<unsigned long>(r->pairs), static_cast<unsigned long>(r->overflow_blocks),
                r->us_per_remove, r->us_per_put);
  }
  std::printf("multi-get, 2 nodes on the tcp fabric, client on node 2 (about half the keys remote):\n");
  if (absl::Status s = farm::kv::MeasureMultiGet(); !s.ok()) {
    std::fprintf(stderr, "multi-get: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
