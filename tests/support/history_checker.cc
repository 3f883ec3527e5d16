#include "tests/support/history_checker.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace farm::testing {
namespace {

constexpr uint32_t kNone = UINT32_MAX;
constexpr uint64_t kNever = UINT64_MAX;  // the end of a promoted kUnknown transaction
constexpr size_t kMaxReported = 10;
constexpr size_t kCycleSources = 16;  // transactions tried as the start of the reported cycle

struct KeyValue {
  uint64_t key;
  uint64_t value;
  bool operator==(const KeyValue&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const KeyValue& kv) {
    return H::combine(std::move(h), kv.key, kv.value);
  }
};

// A value some transaction wrote to a key.
struct Version {
  uint32_t writer;               // index into the history
  bool final;                    // its writer's last write to the key: what it installs
  uint32_t next_writer = kNone;  // ordered keys: the writer of the next version
};

// A transaction's first read of a key, made before it wrote the key.
struct ExternalRead {
  uint32_t txn;
  uint64_t key;
  uint64_t value;
};

// The version a transaction installs on a key (its last write) and what it overwrote,
// if known (recorded, or read before writing).
struct InstalledWrite {
  uint32_t txn;
  uint64_t key;
  uint64_t value;
  std::optional<uint64_t> previous;
};

struct KeyOrder {
  uint32_t first_writer = kNone;  // writer of the version after 0
  bool ordered = false;           // ww and rw edges were derived for this key
};

enum class EdgeKind : uint8_t { kWw, kWr, kRw, kRt };

struct Edge {
  uint32_t from;
  uint32_t to;
  EdgeKind kind;
  uint64_t key;    // ww, wr, rw
  uint64_t value;  // ww: the overwritten value; wr: the value read; rw: the value read
};

std::string Hex(uint64_t key) { return absl::StrFormat("%#x", key); }

// One run of Check(): all derived state, thrown away afterwards. In order:
//   IndexValues   every (key, value) written -> its writer; the recording contract
//   Derive        per transaction in program order: first reads of keys not yet written
//                 by it, installed writes with their previous values, local checks
//   Promote       which transactions are checked (committed, observed kUnknown)
//   ResolveReads  each checked read -> its version, or a violation
//   OrderVersions per key: a chain of previous values, or real time; ww edges
//   ReadEdges     wr and rw edges
//   RealTimeEdges rt edges through barrier nodes
//   FindCycle     Tarjan, then a short cycle in the first cyclic component
// Graph nodes: history indexes 0..n-1 are transactions (aborted ones stay isolated),
// barriers follow.
class Run {
 public:
  explicit Run(const std::vector<HistoryTransaction>& h) : h_(h) {}

  absl::Status Execute(HistoryChecker::Stats* stats);

 private:
  std::string Name(uint32_t t) const { return absl::StrCat("T", h_[t].id); }
  bool Aborted(uint32_t t) const { return h_[t].outcome == HistoryOutcome::kAborted; }
  uint64_t End(uint32_t t) const {
    return h_[t].outcome == HistoryOutcome::kUnknown ? kNever : h_[t].end_ns;
  }
  std::string Span(uint32_t t) const {
    return End(t) == kNever ? absl::StrCat("[", h_[t].start_ns, ", unknown]")
                            : absl::StrCat("[", h_[t].start_ns, ", ", h_[t].end_ns, "]");
  }
  const Version* Find(uint64_t key, uint64_t value) const {
    auto it = versions_.find(KeyValue{key, value});
    return it == versions_.end() ? nullptr : &it->second;
  }
  void AddEdge(uint32_t from, uint32_t to, EdgeKind kind, uint64_t key = 0, uint64_t value = 0) {
    edges_.push_back(Edge{from, to, kind, key, value});
  }
  void Violation(std::string s) { violations_.push_back(std::move(s)); }

  absl::Status IndexValues();
  absl::Status Derive();
  void Promote();
  void ResolveReads();
  void OrderVersions();
  bool ChainOrder(uint64_t key, std::vector<uint32_t>& group);
  bool RealTimeOrder(uint64_t key, std::vector<uint32_t>& group);
  void ReadEdges();
  void RealTimeEdges();
  void FindCycle();
  std::string DescribeCycle(const std::vector<uint32_t>& path) const;

  const std::vector<HistoryTransaction>& h_;
  HistoryChecker::Stats stats_;
  absl::flat_hash_map<KeyValue, Version> versions_;
  std::vector<ExternalRead> reads_;
  std::vector<bool> read_ok_;
  std::vector<InstalledWrite> writes_;
  std::vector<size_t> reads_begin_;   // per transaction, n + 1 entries
  std::vector<size_t> writes_begin_;  // per transaction, n + 1 entries
  std::vector<bool> checked_;         // committed, or kUnknown and promoted
  std::vector<std::pair<uint32_t, std::string>> local_violations_;  // reported if checked
  absl::flat_hash_map<uint64_t, KeyOrder> keys_;
  std::vector<Edge> edges_;
  uint32_t nodes_ = 0;
  std::string cycle_;  // the reported dependency cycle, if any
  std::vector<std::string> violations_;
  std::vector<std::string> unchecked_;
};

absl::Status Run::IndexValues() {
  absl::flat_hash_set<uint64_t> ids;
  absl::flat_hash_map<uint64_t, uint64_t> last;  // key -> last value written, per txn
  for (uint32_t i = 0; i < h_.size(); ++i) {
    const HistoryTransaction& t = h_[i];
    if (t.outcome == HistoryOutcome::kCommitted) {
      if (t.start_ns > t.end_ns) {
        return absl::InvalidArgumentError(absl::StrCat("history cannot be checked: ", Name(i),
                                                       " starts at ", t.start_ns,
                                                       " ns, after its end at ", t.end_ns, " ns"));
      }
      if (!ids.insert(t.id).second) {
        return absl::InvalidArgumentError(
            absl::StrCat("history cannot be checked: two committed transactions have id ", t.id));
      }
    }
    last.clear();
    for (const HistoryOp& op : t.ops) {
      if (op.kind != HistoryOp::Kind::kWrite) continue;
      if (op.value == 0) {
        return absl::InvalidArgumentError(absl::StrCat("history cannot be checked: ", Name(i),
                                                       " wrote value 0 to key ", Hex(op.key),
                                                       "; 0 names the initial version"));
      }
      last[op.key] = op.value;
    }
    for (const HistoryOp& op : t.ops) {
      if (op.kind != HistoryOp::Kind::kWrite) continue;
      const bool final = last[op.key] == op.value;
      auto [it, inserted] = versions_.try_emplace(KeyValue{op.key, op.value}, Version{i, final});
      if (inserted) continue;
      Version& v = it->second;
      if (v.writer == i) {
        v.final = v.final || final;
      } else if (Aborted(v.writer) && !Aborted(i)) {
        v = Version{i, final};  // a retried attempt's value: the committed one wrote it
      } else if (!Aborted(i)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "history cannot be checked: ", Name(v.writer), " and ", Name(i), " both wrote value ",
            op.value, " to key ", Hex(op.key), "; values must be unique per key"));
      }
    }
  }
  return absl::OkStatus();
}

// Per transaction, in program order: external reads, installed writes and the checks
// that need only the transaction itself.
absl::Status Run::Derive() {
  struct KeyState {
    bool has_read = false;
    uint64_t read = 0;  // the first value read before writing
    bool has_written = false;
    uint64_t written = 0;  // the latest value written
    std::optional<uint64_t> previous;
  };
  absl::flat_hash_map<uint64_t, KeyState> state;
  std::vector<uint64_t> written_keys;
  reads_begin_.assign(h_.size() + 1, 0);
  writes_begin_.assign(h_.size() + 1, 0);
  for (uint32_t i = 0; i < h_.size(); ++i) {
    reads_begin_[i] = reads_.size();
    writes_begin_[i] = writes_.size();
    const HistoryTransaction& t = h_[i];
    if (t.outcome == HistoryOutcome::kAborted) continue;
    state.clear();
    written_keys.clear();
    for (const HistoryOp& op : t.ops) {
      KeyState& s = state[op.key];
      if (op.kind == HistoryOp::Kind::kRead) {
        if (s.has_written) {
          if (op.value != s.written) {
            local_violations_.emplace_back(
                i, absl::StrCat(Name(i), " read key ", Hex(op.key), " = ", op.value,
                                " after writing ", s.written, ": it must see its own write"));
          }
        } else if (s.has_read) {
          if (op.value != s.read) {
            local_violations_.emplace_back(
                i, absl::StrCat("non-repeatable read: ", Name(i), " read key ", Hex(op.key), " = ",
                                s.read, " and then ", op.value, " without writing it between"));
          }
        } else {
          s.has_read = true;
          s.read = op.value;
          reads_.push_back(ExternalRead{i, op.key, op.value});
        }
        continue;
      }
      if (op.previous.has_value()) {
        if (s.previous.has_value() && *s.previous != *op.previous) {
          return absl::InvalidArgumentError(absl::StrCat(
              "history cannot be checked: ", Name(i), " records two previous values of key ",
              Hex(op.key), ": ", *s.previous, " and ", *op.previous));
        }
        s.previous = op.previous;
      }
      if (!s.has_written) written_keys.push_back(op.key);
      s.has_written = true;
      s.written = op.value;
    }
    for (uint64_t key : written_keys) {
      const KeyState& s = state[key];
      std::optional<uint64_t> previous = s.previous;
      if (s.has_read) {
        if (previous.has_value() && *previous != s.read) {
          local_violations_.emplace_back(
              i, absl::StrCat(Name(i), " read key ", Hex(key), " = ", s.read,
                              " but its write overwrote ", *previous));
        }
        if (!previous.has_value()) previous = s.read;
      }
      writes_.push_back(InstalledWrite{i, key, s.written, previous});
    }
  }
  reads_begin_[h_.size()] = reads_.size();
  writes_begin_[h_.size()] = writes_.size();
  return absl::OkStatus();
}

// Committed transactions are checked; so are kUnknown ones whose installed values a
// checked transaction read or overwrote (transitively).
void Run::Promote() {
  checked_.assign(h_.size(), false);
  std::vector<uint32_t> work;
  for (uint32_t i = 0; i < h_.size(); ++i) {
    switch (h_[i].outcome) {
      case HistoryOutcome::kCommitted:
        checked_[i] = true;
        work.push_back(i);
        break;
      case HistoryOutcome::kAborted:
        ++stats_.aborted;
        break;
      case HistoryOutcome::kUnknown:
        ++stats_.unknown;
        break;
    }
  }
  auto observe = [&](uint64_t key, uint64_t value) {
    if (value == 0) return;
    const Version* v = Find(key, value);
    if (v == nullptr || !v->final || checked_[v->writer] ||
        h_[v->writer].outcome != HistoryOutcome::kUnknown) {
      return;
    }
    checked_[v->writer] = true;
    ++stats_.promoted;
    work.push_back(v->writer);
  };
  while (!work.empty()) {
    const uint32_t i = work.back();
    work.pop_back();
    for (size_t r = reads_begin_[i]; r < reads_begin_[i + 1]; ++r) {
      observe(reads_[r].key, reads_[r].value);
    }
    for (size_t w = writes_begin_[i]; w < writes_begin_[i + 1]; ++w) {
      if (writes_[w].previous.has_value()) observe(writes_[w].key, *writes_[w].previous);
    }
  }
  for (uint32_t i = 0; i < h_.size(); ++i) stats_.committed += checked_[i] ? 1 : 0;
  for (const auto& [txn, message] : local_violations_) {
    if (checked_[txn]) Violation(message);
  }
}

void Run::ResolveReads() {
  read_ok_.assign(reads_.size(), false);
  for (size_t r = 0; r < reads_.size(); ++r) {
    const ExternalRead& read = reads_[r];
    if (!checked_[read.txn]) continue;
    if (read.value == 0) {
      read_ok_[r] = true;
      continue;
    }
    const Version* v = Find(read.key, read.value);
    if (v != nullptr && v->writer != read.txn && !Aborted(v->writer) && v->final) {
      read_ok_[r] = true;  // the writer is checked: committed, or promoted by this read
      continue;
    }
    const std::string what =
        absl::StrCat(Name(read.txn), " read key ", Hex(read.key), " = ", read.value);
    if (v == nullptr) {
      Violation(absl::StrCat(what, ", which no transaction wrote"));
    } else if (v->writer == read.txn) {
      Violation(absl::StrCat(what, " before writing that value itself"));
    } else if (Aborted(v->writer)) {
      Violation(
          absl::StrCat("dirty read: ", what, ", written by ", Name(v->writer), ", which aborted"));
    } else {
      Violation(absl::StrCat("intermediate read: ", what, ", which ", Name(v->writer),
                             " overwrote before committing"));
    }
  }
}

void Run::OrderVersions() {
  std::vector<uint32_t> installed;
  for (uint32_t w = 0; w < writes_.size(); ++w) {
    if (checked_[writes_[w].txn]) installed.push_back(w);
  }
  std::stable_sort(installed.begin(), installed.end(),
                   [this](uint32_t a, uint32_t b) { return writes_[a].key < writes_[b].key; });
  std::vector<uint32_t> group;
  for (size_t begin = 0; begin < installed.size();) {
    const uint64_t key = writes_[installed[begin]].key;
    size_t end = begin;
    while (end < installed.size() && writes_[installed[end]].key == key) ++end;
    group.assign(installed.begin() + begin, installed.begin() + end);
    begin = end;
    ++stats_.keys;
    const bool all_previous = std::all_of(
        group.begin(), group.end(), [this](uint32_t w) { return writes_[w].previous.has_value(); });
    const bool ordered = all_previous ? ChainOrder(key, group) : RealTimeOrder(key, group);
    if (!ordered) {
      ++stats_.unordered_keys;
      continue;
    }
    ++(all_previous ? stats_.chained_keys : stats_.real_time_keys);
    // `group` is now in version order.
    KeyOrder& order = keys_[key];
    order.ordered = true;
    order.first_writer = writes_[group[0]].txn;
    for (size_t j = 0; j + 1 < group.size(); ++j) {
      const InstalledWrite& a = writes_[group[j]];
      const InstalledWrite& b = writes_[group[j + 1]];
      versions_[KeyValue{key, a.value}].next_writer = b.txn;
      AddEdge(a.txn, b.txn, EdgeKind::kWw, key, a.value);
      ++stats_.ww_edges;
    }
  }
}

bool Run::ChainOrder(uint64_t key, std::vector<uint32_t>& group) {
  bool ok = true;
  for (uint32_t w : group) {
    const InstalledWrite& write = writes_[w];
    const uint64_t p = *write.previous;
    if (p == 0) continue;
    const Version* v = Find(key, p);
    // Fine if the writer is checked: committed, or promoted by this write.
    if (v != nullptr && v->writer != write.txn && !Aborted(v->writer) && v->final) continue;
    const std::string what = absl::StrCat(Name(write.txn), " overwrote key ", Hex(key), " = ", p);
    if (v == nullptr) {
      Violation(absl::StrCat(what, ", which no transaction wrote"));
    } else if (v->writer == write.txn) {
      Violation(absl::StrCat(what, ", its own value"));
    } else if (Aborted(v->writer)) {
      Violation(
          absl::StrCat("dirty write: ", what, ", written by ", Name(v->writer), ", which aborted"));
    } else {
      Violation(absl::StrCat(what, ", an intermediate value of ", Name(v->writer)));
    }
    ok = false;
  }
  std::sort(group.begin(), group.end(),
            [this](uint32_t a, uint32_t b) { return *writes_[a].previous < *writes_[b].previous; });
  for (size_t j = 0; j + 1 < group.size(); ++j) {
    const InstalledWrite& a = writes_[group[j]];
    const InstalledWrite& b = writes_[group[j + 1]];
    if (*a.previous == *b.previous) {
      Violation(absl::StrCat("lost update on key ", Hex(key), ": ", Name(a.txn), " and ",
                             Name(b.txn), " both overwrote value ", *a.previous));
      ok = false;
    }
  }
  if (!ok) return false;
  // Walk the chain from the initial version. Previous values are distinct and never
  // equal a written value of 0, so the walk visits each version at most once.
  std::vector<uint32_t> chain;
  uint64_t current = 0;
  while (chain.size() < group.size()) {
    auto it = std::lower_bound(group.begin(), group.end(), current,
                               [this](uint32_t w, uint64_t v) { return *writes_[w].previous < v; });
    if (it == group.end() || *writes_[*it].previous != current) break;
    chain.push_back(*it);
    current = writes_[*it].value;
  }
  if (chain.size() < group.size()) {
    std::vector<std::string> stranded;
    for (uint32_t w : group) {
      if (std::find(chain.begin(), chain.end(), w) == chain.end()) {
        stranded.push_back(absl::StrCat(Name(writes_[w].txn), " (", *writes_[w].previous, " -> ",
                                        writes_[w].value, ")"));
      }
    }
    Violation(absl::StrCat("versions of key ", Hex(key),
                           " do not descend from the initial value (a cycle of previous "
                           "values): ",
                           absl::StrJoin(stranded, ", ")));
    return false;
  }
  group = std::move(chain);
  return true;
}

bool Run::RealTimeOrder(uint64_t key, std::vector<uint32_t>& group) {
  std::sort(group.begin(), group.end(),
            [this](uint32_t a, uint32_t b) { return End(writes_[a].txn) < End(writes_[b].txn); });
  for (size_t j = 0; j + 1 < group.size(); ++j) {
    const uint32_t a = writes_[group[j]].txn;
    const uint32_t b = writes_[group[j + 1]].txn;
    if (!(End(a) < h_[b].start_ns)) {
      unchecked_.push_back(absl::StrCat(
          "key ", Hex(key), ": cannot order the writes of ", Name(a), " ", Span(a), " and ",
          Name(b), " ", Span(b),
          ": they overlap in real time and not every write records its previous value"));
      return false;
    }
  }
  // Strict serializability forces this order; previous values that are known must agree.
  for (size_t j = 0; j < group.size(); ++j) {
    const InstalledWrite& w = writes_[group[j]];
    const uint64_t expected = j == 0 ? 0 : writes_[group[j - 1]].value;
    if (w.previous.has_value() && *w.previous != expected) {
      Violation(absl::StrCat(Name(w.txn), " overwrote key ", Hex(key), " = ", *w.previous,
                             ", but in real-time order it follows value ", expected,
                             j == 0 ? std::string(" (initial)")
                                    : absl::StrCat(" of ", Name(writes_[group[j - 1]].txn))));
    }
  }
  return true;
}

void Run::ReadEdges() {
  for (size_t r = 0; r < reads_.size(); ++r) {
    if (!read_ok_[r]) continue;
    const ExternalRead& read = reads_[r];
    uint32_t next = kNone;
    auto order = keys_.find(read.key);
    const bool ordered = order != keys_.end() && order->second.ordered;
    if (read.value == 0) {
      if (ordered) next = order->second.first_writer;
    } else {
      const Version* v = Find(read.key, read.value);
      AddEdge(v->writer, read.txn, EdgeKind::kWr, read.key, read.value);
      ++stats_.wr_edges;
      if (ordered) next = v->next_writer;
    }
    if (next != kNone && next != read.txn) {
      AddEdge(read.txn, next, EdgeKind::kRw, read.key, read.value);
      ++stats_.rw_edges;
    }
  }
}

// T1 -> T2 iff T1.end < T2.start, through a chain of barrier nodes: each start links
// from the newest barrier; a barrier is made when transactions ended since the last one,
// and links from them and from the barrier before it.
void Run::RealTimeEdges() {
  std::vector<uint32_t> by_start, by_end;
  for (uint32_t i = 0; i < h_.size(); ++i) {
    if (!checked_[i]) continue;
    by_start.push_back(i);
    if (End(i) != kNever) by_end.push_back(i);
  }
  std::sort(by_start.begin(), by_start.end(),
            [this](uint32_t a, uint32_t b) { return h_[a].start_ns < h_[b].start_ns; });
  std::sort(by_end.begin(), by_end.end(),
            [this](uint32_t a, uint32_t b) { return End(a) < End(b); });
  uint32_t barrier = kNone;
  size_t e = 0;
  for (uint32_t t : by_start) {
    const uint64_t start = h_[t].start_ns;
    if (e < by_end.size() && End(by_end[e]) < start) {
      const uint32_t fresh = nodes_++;
      if (barrier != kNone) AddEdge(barrier, fresh, EdgeKind::kRt);
      for (; e < by_end.size() && End(by_end[e]) < start; ++e) {
        AddEdge(by_end[e], fresh, EdgeKind::kRt);
      }
      barrier = fresh;
    }
    if (barrier != kNone) AddEdge(barrier, t, EdgeKind::kRt);
  }
}

// Tarjan's strongly connected components, iteratively; then the shortest cycle through
// one transaction of the first non-trivial component (breadth-first within it).
void Run::FindCycle() {
  const uint32_t n = nodes_;
  std::vector<uint32_t> offset(n + 1, 0);
  for (const Edge& e : edges_) ++offset[e.from + 1];
  for (uint32_t v = 0; v < n; ++v) offset[v + 1] += offset[v];
  std::vector<uint32_t> adj(edges_.size());
  {
    std::vector<uint32_t> fill(offset.begin(), offset.end() - 1);
    for (uint32_t i = 0; i < edges_.size(); ++i) adj[fill[edges_[i].from]++] = i;
  }
  std::vector<uint32_t> index(n, kNone), low(n, 0), component(n, kNone);
  std::vector<bool> on_stack(n, false);
  std::vector<uint32_t> stack;
  std::vector<std::pair<uint32_t, uint32_t>> calls;  // node, next position in adj
  uint32_t counter = 0, components = 0;
  uint32_t cyclic = kNone;  // a component with more than one node
  for (uint32_t root = 0; root < n && cyclic == kNone; ++root) {
    if (index[root] != kNone) continue;
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = true;
    calls.emplace_back(root, offset[root]);
    while (!calls.empty()) {
      const uint32_t v = calls.back().first;
      const uint32_t pos = calls.back().second;
      if (pos < offset[v + 1]) {
        ++calls.back().second;
        const uint32_t w = edges_[adj[pos]].to;
        if (index[w] == kNone) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on_stack[w] = true;
          calls.emplace_back(w, offset[w]);
        } else if (on_stack[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      calls.pop_back();
      if (!calls.empty()) {
        const uint32_t u = calls.back().first;
        low[u] = std::min(low[u], low[v]);
      }
      if (low[v] != index[v]) continue;
      const uint32_t id = components++;
      size_t size = 0;
      uint32_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on_stack[w] = false;
        component[w] = id;
        ++size;
      } while (w != v);
      if (size > 1 && cyclic == kNone) cyclic = id;
    }
  }
  if (cyclic == kNone) return;
  // Barrier nodes only chain forward, so the component holds transactions. Try a few
  // of them as the source and keep the cycle with the fewest transactions.
  std::vector<uint32_t> sources;
  for (uint32_t v = 0; v < h_.size() && sources.size() < kCycleSources; ++v) {
    if (component[v] == cyclic) sources.push_back(v);
  }
  std::vector<uint32_t> best;
  uint32_t best_length = kNone;
  std::vector<uint32_t> dist(n, kNone), parent(n, kNone);  // parent: edge that reached it
  std::vector<bool> done(n, false);
  std::vector<uint32_t> touched;
  std::deque<uint32_t> queue;
  for (uint32_t source : sources) {
    if (best_length == 2) break;  // no self-loops: nothing shorter exists
    for (uint32_t v : touched) {
      dist[v] = kNone;
      parent[v] = kNone;
      done[v] = false;
    }
    touched.assign(1, source);
    queue.assign(1, source);
    dist[source] = 0;
    uint32_t closing = kNone;
    while (!queue.empty() && closing == kNone) {
      const uint32_t v = queue.front();
      queue.pop_front();
      if (done[v]) continue;
      done[v] = true;
      if (dist[v] + 1 >= best_length) break;
      for (uint32_t p = offset[v]; p < offset[v + 1]; ++p) {
        const Edge& e = edges_[adj[p]];
        if (component[e.to] != cyclic) continue;
        if (e.to == source) {
          closing = adj[p];
          break;
        }
        // 0-1 breadth-first: a cycle's length is its number of transactions.
        const uint32_t cost = e.to < h_.size() ? 1 : 0;
        if (dist[e.to] != kNone && dist[e.to] <= dist[v] + cost) continue;
        if (dist[e.to] == kNone) touched.push_back(e.to);
        dist[e.to] = dist[v] + cost;
        parent[e.to] = adj[p];
        if (cost == 0) {
          queue.push_front(e.to);
        } else {
          queue.push_back(e.to);
        }
      }
    }
    if (closing == kNone) continue;
    std::vector<uint32_t> path{closing};
    for (uint32_t v = edges_[closing].from; v != source; v = edges_[parent[v]].from) {
      path.push_back(parent[v]);
    }
    std::reverse(path.begin(), path.end());
    best_length = dist[edges_[closing].from] + 1;
    best = std::move(path);
  }
  const std::vector<uint32_t>& path = best;
  cycle_ = DescribeCycle(path);
}

std::string Run::DescribeCycle(const std::vector<uint32_t>& path) const {
  // Collapse runs through barrier nodes into one rt edge between transactions.
  struct Step {
    uint32_t from, to;
    const Edge* edge;  // null for rt
  };
  std::vector<Step> steps;
  for (size_t i = 0; i < path.size(); ++i) {
    const Edge& e = edges_[path[i]];
    if (e.kind != EdgeKind::kRt) {
      steps.push_back(Step{e.from, e.to, &e});
      continue;
    }
    const uint32_t from = e.from;
    while (edges_[path[i]].to >= h_.size()) ++i;
    steps.push_back(Step{from, edges_[path[i]].to, nullptr});
  }
  size_t counts[4] = {0, 0, 0, 0};
  std::vector<uint64_t> keys;
  std::string chain = Name(steps[0].from);
  std::vector<std::string> details;
  for (const Step& s : steps) {
    const EdgeKind kind = s.edge == nullptr ? EdgeKind::kRt : s.edge->kind;
    ++counts[static_cast<int>(kind)];
    const std::string from = Name(s.from), to = Name(s.to);
    std::string detail;
    switch (kind) {
      case EdgeKind::kWw:
        absl::StrAppend(&chain, " -ww-> ", to);
        detail = absl::StrCat(from, " -ww-> ", to, ": key ", Hex(s.edge->key), ", ", to,
                              " overwrote value ", s.edge->value, " of ", from);
        break;
      case EdgeKind::kWr:
        absl::StrAppend(&chain, " -wr-> ", to);
        detail = absl::StrCat(from, " -wr-> ", to, ": key ", Hex(s.edge->key), ", ", to,
                              " read value ", s.edge->value, " of ", from);
        break;
      case EdgeKind::kRw:
        absl::StrAppend(&chain, " -rw-> ", to);
        detail =
            absl::StrCat(from, " -rw-> ", to, ": key ", Hex(s.edge->key), ", ", from,
                         " read value ", s.edge->value, " and ", to, " installed the next version");
        break;
      case EdgeKind::kRt:
        absl::StrAppend(&chain, " -rt-> ", to);
        detail = absl::StrCat(from, " -rt-> ", to, ": ", from, " ended at ", End(s.from),
                              " ns, before ", to, " started at ", h_[s.to].start_ns, " ns");
        break;
    }
    if (s.edge != nullptr) keys.push_back(s.edge->key);
    details.push_back(std::move(detail));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const size_t ww = counts[0], wr = counts[1], rw = counts[2], rt = counts[3];
  std::string name = rw == 0 ? (wr == 0 && ww > 0 ? "G0" : "G1c") : rw == 1 ? "G-single" : "G2";
  if (rt > 0) name += "-realtime";
  std::vector<std::string> key_names;
  for (uint64_t k : keys) key_names.push_back(Hex(k));
  return absl::StrCat("dependency cycle (", name, ") of ", steps.size(), " transactions: ", chain,
                      "; keys {", absl::StrJoin(key_names, ", "), "}\n      ",
                      absl::StrJoin(details, "\n      "));
}

absl::Status Run::Execute(HistoryChecker::Stats* stats) {
  auto finish = [&](absl::Status s) {
    stats_.violations = violations_.size();
    stats_.graph_nodes = nodes_;
    for (const Edge& e : edges_) stats_.rt_edges += e.kind == EdgeKind::kRt ? 1 : 0;
    if (stats != nullptr) *stats = stats_;
    return s;
  };
  if (h_.size() >= kNone) return finish(absl::InvalidArgumentError("history too large"));
  if (absl::Status s = IndexValues(); !s.ok()) return finish(s);
  if (absl::Status s = Derive(); !s.ok()) return finish(s);
  Promote();
  ResolveReads();
  nodes_ = static_cast<uint32_t>(h_.size());
  OrderVersions();
  ReadEdges();
  RealTimeEdges();
  FindCycle();
  if (!cycle_.empty()) violations_.insert(violations_.begin(), cycle_);  // the headline
  if (!violations_.empty()) {
    const size_t shown = std::min(violations_.size(), kMaxReported);
    std::string message = absl::StrCat(
        "history is not strictly serializable: ", violations_.size(), " violation(s)\n  - ",
        absl::StrJoin(violations_.begin(), violations_.begin() + shown, "\n  - "));
    if (shown < violations_.size()) {
      absl::StrAppend(&message, "\n  ... and ", violations_.size() - shown, " more");
    }
    if (!unchecked_.empty()) {
      absl::StrAppend(&message, "\n  (and ", unchecked_.size(), " key(s) could not be ordered)");
    }
    return finish(absl::FailedPreconditionError(message));
  }
  if (!unchecked_.empty()) {
    const size_t shown = std::min(unchecked_.size(), kMaxReported);
    return finish(absl::InvalidArgumentError(
        absl::StrCat("history cannot be checked: the version order of ", unchecked_.size(),
                     " key(s) is ambiguous\n  - ",
                     absl::StrJoin(unchecked_.begin(), unchecked_.begin() + shown, "\n  - "))));
  }
  return finish(absl::OkStatus());
}

}  // namespace

uint64_t HistoryChecker::NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void HistoryChecker::Merge(HistoryChecker&& other) {
  if (history_.empty()) {
    history_ = std::move(other.history_);
  } else {
    history_.insert(history_.end(), std::make_move_iterator(other.history_.begin()),
                    std::make_move_iterator(other.history_.end()));
  }
  other.history_.clear();
}

absl::Status HistoryChecker::Check(Stats* stats) const { return Run(history_).Execute(stats); }

}  // namespace farm::testing
