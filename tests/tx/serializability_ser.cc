#include "tests/tx/serializability_ser.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/support/history_checker.h"
#include "tests/tx/serializability_driver.h"
#include "tests/tx/serializability_history.h"
#include "tests/tx/serializability_protocol.h"

namespace farm::tx::testing {

using farm::testing::HistoryChecker;
using farm::testing::HistoryOp;
using farm::testing::HistoryOutcome;
using farm::testing::HistoryTransaction;

namespace {

// The value at every 64-byte payload offset and in the last 8 bytes.
void StoreValue(std::span<char> d, uint64_t v) {
  for (size_t off = 0; off + sizeof(v) <= d.size(); off += 64)
    std::memcpy(d.data() + off, &v, sizeof(v));
  std::memcpy(d.data() + d.size() - sizeof(v), &v, sizeof(v));
}

// Part 1: recorded transactions over `objects` (keys: their raw addresses).
class SerDriver final : public Driver {
 public:
  struct Counts {
    uint64_t committed = 0, aborted = 0, unknown = 0;
    uint64_t rmw_committed = 0, read_only_committed = 0, lock_free = 0;
    uint64_t read_aborts = 0;  // Aborted while reading (nothing to commit)
  };

  SerDriver(node::Node* node, size_t thread, uint64_t seed, const std::vector<FatPtr>* objects)
      : Driver(node, thread, seed), objects_(objects) {}

  std::vector<HistoryTransaction>& history() { return history_; }
  const Counts& counts() const { return counts_; }

 private:
  struct Attempt {
    int slot;
    TxHandle tx;
    std::vector<size_t> keys;
    std::vector<bool> write;
    std::vector<ObjBuf*> bufs;
    size_t pending = 0;
    absl::Status read_error;
    HistoryTransaction h;
  };

  void Launch(int slot) override {
    if (Chance(0.15)) return LaunchLockFree(slot);
    auto a = std::make_shared<Attempt>();
    a->slot = slot;
    a->keys = Pick(2 + Uniform(3), objects_->size());
    a->write.assign(a->keys.size(), false);
    if (!Chance(0.2)) {  // else read-only
      for (size_t i = 0; i < a->keys.size(); ++i) a->write[i] = Chance(0.5);
      a->write[Uniform(a->keys.size())] = true;
    }
    a->bufs.assign(a->keys.size(), nullptr);
    a->pending = a->keys.size();
    a->h.id = NextValue();
    a->h.start_ns = HistoryChecker::NowNs();
    a->tx = txCreate(*ctx_);
    for (size_t i = 0; i < a->keys.size(); ++i) {
      txRead(*a->tx, (*objects_)[a->keys[i]], [this, a, i](absl::StatusOr<ObjBuf*> o) {
        if (o.ok()) {
          a->bufs[i] = *o;
        } else {
          a->read_error.Update(o.status());
        }
        if (--a->pending == 0) AfterReads(a);
      });
    }
  }

  void AfterReads(const std::shared_ptr<Attempt>& a) {
    if (!a->read_error.ok()) {
      txAbort(*a->tx);
      if (a->read_error.code() == absl::StatusCode::kAborted) {
        ++counts_.read_aborts;
      } else {
        errors_.Add(absl::StrCat("txRead failed: ", a->read_error.ToString()));
      }
      return Record(a, HistoryOutcome::kAborted);
    }
    const uint64_t value = a->h.id;
    for (size_t i = 0; i < a->keys.size(); ++i) {
      const uint64_t key = (*objects_)[a->keys[i]].addr.raw();
      uint64_t seen;
      if (!LoadValue(a->bufs[i]->data(), &seen)) {
        errors_.Add(absl::StrFormat("txRead of %s returned a copy mixing two values",
                                    (*objects_)[a->keys[i]].ToString()));
      }
      a->h.Read(key, seen);
    }
    for (size_t i = 0; i < a->keys.size(); ++i) {
      if (!a->write[i]) continue;
      StoreValue(a->bufs[i]->data(), value);
      if (absl::Status s = txWrite(*a->tx, a->bufs[i]); !s.ok()) {
        errors_.Add(absl::StrCat("txWrite: ", s.ToString()));
      }
      a->h.Write((*objects_)[a->keys[i]].addr.raw(), value);
    }
    txCommit(*a->tx, [this, a](absl::Status s) {
      a->h.end_ns = HistoryChecker::NowNs();
      if (s.ok()) return Record(a, HistoryOutcome::kCommitted);
      if (s.code() == absl::StatusCode::kAborted) return Record(a, HistoryOutcome::kAborted);
      if (OutcomeUnknown(s)) return Record(a, HistoryOutcome::kUnknown);
      errors_.Add(absl::StrCat("txCommit: ", s.ToString()));
      Record(a, HistoryOutcome::kAborted);
    });
  }

  void Record(const std::shared_ptr<Attempt>& a, HistoryOutcome outcome) {
    if (a->h.end_ns == 0) a->h.end_ns = HistoryChecker::NowNs();
    const bool writes = std::find(a->write.begin(), a->write.end(), true) != a->write.end();
    switch (outcome) {
      case HistoryOutcome::kCommitted:
        ++counts_.committed;
        ++(writes ? counts_.rmw_committed : counts_.read_only_committed);
        break;
      case HistoryOutcome::kAborted:
        ++counts_.aborted;
        break;
      case HistoryOutcome::kUnknown:
        ++counts_.unknown;
        break;
    }
    a->h.outcome = outcome;
    // Aborted attempts matter only for what they wrote (dirty reads).
    const bool wrote = std::any_of(a->h.ops.begin(), a->h.ops.end(), [](const HistoryOp& op) {
      return op.kind == HistoryOp::Kind::kWrite;
    });
    if (outcome != HistoryOutcome::kAborted || wrote) history_.push_back(std::move(a->h));
    const int slot = a->slot;
    a->tx.reset();
    Ended(slot);
  }

  void LaunchLockFree(int slot) {
    const FatPtr p = (*objects_)[Uniform(objects_->size())];
    auto op = std::make_shared<LockFreeOp>(lockFreeStart(*ctx_));
    const uint64_t start = HistoryChecker::NowNs();
    lockFreeRead(*op, p, [this, op, p, start, slot](absl::StatusOr<LockFreeObject> r) {
      const uint64_t end = HistoryChecker::NowNs();
      uint64_t seen = 0;
      const bool ok = r.ok() && LoadValue(r->data, &seen);
      op->End();
      if (!r.ok()) {
        errors_.Add(absl::StrCat("lockFreeRead of ", p.ToString(), ": ", r.status().ToString()));
      } else if (!ok) {
        errors_.Add(
            absl::StrCat("lockFreeRead of ", p.ToString(), " accepted a copy mixing two values"));
      } else {
        HistoryTransaction h;
        h.id = NextValue();
        h.start_ns = start;
        h.end_ns = end;
        h.Read(p.addr.raw(), seen);
        history_.push_back(std::move(h));
        ++counts_.committed;
        ++counts_.lock_free;
      }
      Ended(slot);
    });
  }

  const std::vector<FatPtr>* const objects_;
  std::vector<HistoryTransaction> history_;
  Counts counts_;
};

}  // namespace

bool LoadValue(std::span<const char> d, uint64_t* v) {
  std::memcpy(v, d.data(), sizeof(*v));
  uint64_t other;
  for (size_t off = 64; off + sizeof(other) <= d.size(); off += 64) {
    std::memcpy(&other, d.data() + off, sizeof(other));
    if (other != *v) return false;
  }
  std::memcpy(&other, d.data() + d.size() - sizeof(other), sizeof(other));
  return other == *v;
}

int RunSer(node::Node& node, const std::vector<std::string>& w, const std::string& dir) {
  int64_t ms = 0;
  uint64_t seed = 0;
  if (w.size() < 3 || !absl::SimpleAtoi(w[1], &ms) || !absl::SimpleAtoi(w[2], &seed)) return 2;
  const std::vector<FatPtr> objects = ParsePtrs(w, 3);
  const NodeId id = node.options().node_id;
  std::vector<std::unique_ptr<SerDriver>> drivers;
  for (size_t t = 0; t < node.thread_count(); ++t) {
    drivers.push_back(std::make_unique<SerDriver>(&node, t, seed * 1000 + id * 10 + t, &objects));
  }
  if (!RunDrivers(node, drivers, ms, /*slots=*/4)) {
    std::printf("ERROR node %u: the workload did not end in time\n", id);
    return 3;
  }
  const std::string path = absl::StrCat(dir, "/history-", id, ".txt");
  std::ofstream out(path);
  SerDriver::Counts c;
  tx::TxStats s;
  for (auto& d : drivers) {
    for (const HistoryTransaction& t : d->history()) out << FormatTransaction(t) << '\n';
    PrintErrors(d->errors());
    const SerDriver::Counts& dc = d->counts();
    c.committed += dc.committed, c.aborted += dc.aborted, c.unknown += dc.unknown;
    c.rmw_committed += dc.rmw_committed, c.read_only_committed += dc.read_only_committed;
    c.lock_free += dc.lock_free, c.read_aborts += dc.read_aborts;
    Add(&s, d->stats());
  }
  out.close();
  std::printf(
      "DONE node=%u committed=%lu aborted=%lu unknown=%lu rmw=%lu ro=%lu lock_free=%lu "
      "read_aborts=%lu %s history=%s\n",
      id, c.committed, c.aborted, c.unknown, c.rmw_committed, c.read_only_committed, c.lock_free,
      c.read_aborts, FormatTxStats(s).c_str(), path.c_str());
  return 0;
}

}  // namespace farm::tx::testing
