#include "tools/kv_bench/hopscotch_figures.h"

#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "kv/local_kv_cluster.h"
#include "kv/table_client.h"

namespace farm::kv::bench {
namespace {

std::string Key(uint64_t i) { return absl::StrFormat("user%012d", i); }
std::string Value(uint64_t i) { return absl::StrFormat("value-%026d", i); }  // 32 bytes

// Puts (or removes) keys 0..count-1 from client (1, 0), kWindow at a time; deletes
// itself at the end.
template <typename Finish>
struct Loader {
  static constexpr uint64_t kWindow = 64;
  KvClient* c;
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
      [count, kind](KvClient& c, auto finish) {
        (new Loader<decltype(finish)>{&c, count, kind, std::move(finish)})->Start();
      },
      absl::Minutes(10));
}

// One node with one thread and a table of o.buckets buckets (the layout figures need
// no replication).
absl::StatusOr<std::unique_ptr<LocalKvCluster>> StartOneNode(const HopscotchOptions& h, TableOptions t,
                                                             const std::string& name) {
  InProcessClusterOptions o;
  o.nodes = 1;
  o.threads = 1;
  o.replication = 1;
  o.region_bytes = 256u << 20;
  o.capacity_bytes = 1024u << 20;
  o.dir = h.dir + "-" + name;
  t.buckets_per_node = h.buckets;
  return LocalKvCluster::Start(o, t);
}

absl::StatusOr<TableScan> ScanOf(LocalKvCluster& kv) {
  return kv.Run<absl::StatusOr<TableScan>>(1, 0, [](KvClient& c, auto finish) { c.Scan(std::move(finish)); });
}

// Times `batches` batches of `batch` lookups, issued together (MultiGet) or one after
// another; deletes itself at the end.
template <typename Finish>
struct BatchRun {
  static constexpr uint64_t kKeys = 10000;
  KvClient* c;
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

}  // namespace

absl::StatusOr<HLayoutResult> MeasureHopscotchLayout(const HopscotchOptions& h, uint32_t n, bool inline_values) {
  TableOptions t;
  t.layout.neighbourhood = n;
  t.layout.inline_value_bytes = inline_values ? 32 : 0;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = StartOneNode(h, t, "layout");
  if (!kv.ok()) return kv.status();
  const uint64_t slots = dynamic_cast<TableClient&>((*kv)->client(1)).map().total_buckets() * t.layout.slots_per_bucket();
  const uint64_t pairs = static_cast<uint64_t>(slots * h.occupancy);
  if (absl::Status s = Load(**kv, pairs); !s.ok()) return s;
  const LookupStats before = (*kv)->client(1).lookup_stats();
  absl::Status looked = (*kv)->Run<absl::Status>(
      1, 0,
      [pairs](KvClient& c, auto finish) {
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
      },
      absl::Minutes(10));
  if (!looked.ok()) return looked;
  const LookupStats after = (*kv)->client(1).lookup_stats();
  absl::StatusOr<TableScan> scan = ScanOf(**kv);
  if (!scan.ok()) return scan.status();
  HLayoutResult r;
  const double lookups = static_cast<double>(after.lookups - before.lookups);
  r.reads_per_lookup = (after.reads - before.reads) / lookups;
  r.bytes_per_lookup = (after.bytes_read - before.bytes_read) / lookups;
  r.occupancy = scan->occupancy();
  r.utilisation = scan->utilisation();
  r.overflow_blocks = scan->overflow_blocks;
  return r;
}

absl::StatusOr<ChurnResult> MeasureChurn(const HopscotchOptions& h, uint32_t n) {
  TableOptions t;
  t.layout.neighbourhood = n;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = StartOneNode(h, t, "churn");
  if (!kv.ok()) return kv.status();
  ChurnResult r;
  r.pairs = static_cast<uint64_t>(dynamic_cast<TableClient&>((*kv)->client(1)).map().total_buckets() *
                                  t.layout.slots_per_bucket() * h.occupancy);
  if (absl::Status s = Load(**kv, r.pairs); !s.ok()) return s;
  absl::StatusOr<TableScan> scan = ScanOf(**kv);
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

absl::Status MeasureMultiGet(const HopscotchOptions& h) {
  InProcessClusterOptions o;
  o.backend = "tcp";  // real round trips (shm READs are memory copies)
  o.nodes = 2;
  o.threads = 1;
  o.replication = 1;
  o.dir = h.dir + "-multiget";
  TableOptions t;
  t.buckets_per_node = 4096;
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = LocalKvCluster::Start(o, t);
  if (!kv.ok()) return kv.status();
  if (absl::Status s = Load(**kv, BatchRun<int>::kKeys); !s.ok()) return s;
  for (bool together : {false, true}) {
    absl::StatusOr<absl::Duration> took = (*kv)->Run<absl::StatusOr<absl::Duration>>(
        2, 0,
        [batch = h.batch, batches = h.batches, together](KvClient& c, auto finish) {
          (new BatchRun<decltype(finish)>{&c, batch, batches, together, std::move(finish)})->Next();
        },
        absl::Minutes(10));
    if (!took.ok()) return took.status();
    std::printf("  %-28s %8.1f us per batch of %u (%.2f us per key)\n",
                together ? "multi-get (issued together)" : "lookups one after another",
                absl::ToDoubleMicroseconds(*took) / h.batches, h.batch,
                absl::ToDoubleMicroseconds(*took) / h.batches / h.batch);
  }
  return absl::OkStatus();
}

}  // namespace farm::kv::bench
