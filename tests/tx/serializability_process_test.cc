// Strict serializability across processes (the headline test), for each fabric
// backend: three node processes (this binary re-executed, static membership, r = 3)
// run concurrent transactions from both worker threads of every node, several in
// flight per thread, over objects spread across the three nodes.
//
//   StrictSerializability  random mixes of read-modify-writes and reads over 2–4 keys,
//                          read-only transactions and lock-free reads, each recorded
//                          with its values and CLOCK_MONOTONIC span (comparable across
//                          processes on one host); the parent merges the three histories
//                          and the HistoryChecker must find no violation. Objects span up
//                          to four cache lines and repeat their value in each, so a copy
//                          that mixes two writes is caught as well.
//   BankTransfers          transfers between accounts of 200 bytes (four cache lines,
//                          CRC-32C at the end) from every node; lock-free readers on
//                          every node check every copy they accept; read-only audits of
//                          every account must see the initial total; so must a final one.
//
// Parent and children talk over the children's stdin/stdout, one line per message:
//   child -> READY                          node started and linked to every peer
//   ALLOC <kind> <count> <size>...          -> OBJECTS <ptr>...   (kind: ser | bank)
//   SER <ms> <seed> <ptr>...                -> ERROR <msg>... DONE <key=value>...
//   SERFINAL <ptr>...                       -> FINAL <history line>
//   BANK <ms> <seed> <ptr>...               -> ERROR <msg>... DONE <key=value>...
//   AUDIT <ptr>...                          -> AUDIT total=<n> ...
//   STOP                                    -> STOPPED
// A pointer is <addr hex>:<size>:<incarnation>. Histories go to files in the cluster's
// directory (one line per transaction, see FormatTransaction). On a violation the test
// describes each transaction the checker names (kind, node, commit path, times,
// operations with each key's primary) and keeps the directory.
//
// Run time: 6 s of workload per test and backend at FARM_STRESS_SCALE=1 (about 30 s in
// all); the scale multiplies the workload time (0.05 under sanitizers; the bank runs at
// least 1 s).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "farm/base/crc32c.h"
#include "farm/base/mutex.h"
#include "farm/fabric/socket_util.h"
#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/history_checker.h"
#include "tests/support/node_cluster.h"

namespace farm {
namespace {

using testing::ChildProcess;
using testing::HistoryChecker;
using testing::HistoryOp;
using testing::HistoryOutcome;
using testing::HistoryTransaction;

constexpr int kNodes = 3;
constexpr char kSecret[] = "serializability-process-test-secret-0123";

// --- Part 1 objects: a value repeated in every cache line ---

// Sizes of the objects, by index: one to four cache lines of payload.
constexpr uint32_t kSerSizes[] = {16, 72, 136, 200};

// The value at every 64-byte payload offset and in the last 8 bytes.
void StoreValue(std::span<char> d, uint64_t v) {
  for (size_t off = 0; off + sizeof(v) <= d.size(); off += 64)
    std::memcpy(d.data() + off, &v, sizeof(v));
  std::memcpy(d.data() + d.size() - sizeof(v), &v, sizeof(v));
}

// The value, if every copy of it agrees.
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

// --- Part 2 objects: bank accounts ---

constexpr uint32_t kAccountBytes = 200;  // four cache lines with the object's header
constexpr size_t kCrcOffset = kAccountBytes - sizeof(uint32_t);
constexpr int64_t kInitialBalance = 1000;

// balance, the writer's unique serial, filler derived from both, CRC-32C of the rest.
void StoreAccount(std::span<char> d, int64_t balance, uint64_t serial) {
  std::memcpy(d.data(), &balance, sizeof(balance));
  std::memcpy(d.data() + 8, &serial, sizeof(serial));
  uint64_t x = serial * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(balance);
  for (size_t i = 16; i < kCrcOffset; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    d[i] = static_cast<char>(x >> 56);
  }
  const uint32_t crc = Crc32c(absl::string_view(d.data(), kCrcOffset));
  std::memcpy(d.data() + kCrcOffset, &crc, sizeof(crc));
}

bool LoadAccount(std::span<const char> d, int64_t* balance) {
  if (d.size() != kAccountBytes) return false;
  uint32_t crc;
  std::memcpy(&crc, d.data() + kCrcOffset, sizeof(crc));
  if (crc != Crc32c(absl::string_view(d.data(), kCrcOffset))) return false;
  std::memcpy(balance, d.data(), sizeof(*balance));
  return true;
}

// --- Text forms ---

std::string FormatPtr(const FatPtr& p) {
  return absl::StrFormat("%x:%d:%d", p.addr.raw(), p.size, p.incarnation);
}

bool ParsePtr(absl::string_view s, FatPtr* p) {
  std::vector<absl::string_view> f = absl::StrSplit(s, ':');
  uint64_t raw;
  return f.size() == 3 && absl::SimpleHexAtoi(f[0], &raw) && absl::SimpleAtoi(f[1], &p->size) &&
         absl::SimpleAtoi(f[2], &p->incarnation) && (p->addr = Addr::FromRaw(raw), true);
}

std::vector<FatPtr> ParsePtrs(const std::vector<std::string>& words, size_t from) {
  std::vector<FatPtr> out;
  for (size_t i = from; i < words.size(); ++i) {
    FatPtr p;
    if (ParsePtr(words[i], &p)) out.push_back(p);
  }
  return out;
}

std::string FormatPtrs(const std::vector<FatPtr>& ptrs) {
  return absl::StrJoin(ptrs, " ",
                       [](std::string* out, const FatPtr& p) { out->append(FormatPtr(p)); });
}

// "T <id> <start_ns> <end_ns> <c|a|u> (r|w)<key>=<value>..." (ids, keys, values in hex).
std::string FormatTransaction(const HistoryTransaction& t) {
  const char outcome = t.outcome == HistoryOutcome::kCommitted ? 'c'
                       : t.outcome == HistoryOutcome::kAborted ? 'a'
                                                               : 'u';
  std::string line = absl::StrFormat("T %x %d %d %c", t.id, t.start_ns, t.end_ns, outcome);
  for (const HistoryOp& op : t.ops) {
    absl::StrAppendFormat(&line, " %c%x=%x", op.kind == HistoryOp::Kind::kRead ? 'r' : 'w', op.key,
                          op.value);
  }
  return line;
}

bool ParseTransaction(absl::string_view line, HistoryTransaction* t) {
  std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (w.size() < 5 || w[0] != "T" || !absl::SimpleHexAtoi(w[1], &t->id) ||
      !absl::SimpleAtoi(w[2], &t->start_ns) || !absl::SimpleAtoi(w[3], &t->end_ns) ||
      w[4].size() != 1) {
    return false;
  }
  switch (w[4][0]) {
    case 'c':
      t->outcome = HistoryOutcome::kCommitted;
      break;
    case 'a':
      t->outcome = HistoryOutcome::kAborted;
      break;
    case 'u':
      t->outcome = HistoryOutcome::kUnknown;
      break;
    default:
      return false;
  }
  for (size_t i = 5; i < w.size(); ++i) {
    const absl::string_view op = w[i];
    const size_t eq = op.find('=');
    uint64_t key, value;
    if (op.size() < 4 || eq == absl::string_view::npos ||
        !absl::SimpleHexAtoi(op.substr(1, eq - 1), &key) ||
        !absl::SimpleHexAtoi(op.substr(eq + 1), &value)) {
      return false;
    }
    if (op[0] == 'r')
      t->Read(key, value);
    else if (op[0] == 'w')
      t->Write(key, value);
    else
      return false;
  }
  return true;
}

// key=value fields of a result line ("DONE a=1 b=2"); 0 when missing.
uint64_t Field(absl::string_view line, absl::string_view key) {
  for (absl::string_view w : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
    if (w.size() > key.size() && w.substr(0, key.size()) == key && w[key.size()] == '=') {
      int64_t v = 0;
      if (absl::SimpleAtoi(w.substr(key.size() + 1), &v)) return static_cast<uint64_t>(v);
    }
  }
  return 0;
}

// Commit errors that leave the outcome unknown (farm.h).
bool OutcomeUnknown(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kDeadlineExceeded;
}

tx::TxStats Minus(const tx::TxStats& a, const tx::TxStats& b) {
  tx::TxStats d;
  d.committed = a.committed - b.committed;
  d.aborted = a.aborted - b.aborted;
  d.read_only = a.read_only - b.read_only;
  d.single_machine = a.single_machine - b.single_machine;
  d.shipped = a.shipped - b.shipped;
  d.distributed = a.distributed - b.distributed;
  d.lock_free_reads = a.lock_free_reads - b.lock_free_reads;
  d.served_prepares = a.served_prepares - b.served_prepares;
  d.served_single_machine = a.served_single_machine - b.served_single_machine;
  return d;
}

std::string FormatTxStats(const tx::TxStats& s) {
  return absl::StrFormat(
      "tx_committed=%d tx_aborted=%d read_only=%d single_machine=%d shipped=%d distributed=%d "
      "served_prepares=%d served_single_machine=%d",
      s.committed, s.aborted, s.read_only, s.single_machine, s.shipped, s.distributed,
      s.served_prepares, s.served_single_machine);
}

// --- Child side: workload drivers, one per worker thread, run on that thread's loop ---

// What a driver found that fails the test (first few messages kept).
struct Errors {
  uint64_t count = 0;
  std::vector<std::string> first;
  void Add(std::string message) {
    if (++count <= 5) first.push_back(std::move(message));
  }
};

// A driver keeps `slots` operations in flight on its thread until the deadline, then
// reports when the last one ended. Subclasses start one operation in Launch(slot) and
// call Ended(slot) when it is over.
class Driver {
 public:
  Driver(node::Node* node, size_t thread, uint64_t seed)
      : node_(node), thread_(thread), ctx_(&node->context(thread)), rng_(seed) {}
  virtual ~Driver() = default;

  // On the driver's loop thread.
  void Start(EventLoop::Clock::time_point deadline, int slots, Notification* done) {
    deadline_ = deadline;
    done_ = done;
    before_ = ctx_->stats();
    reader_before_ = ctx_->reader().stats();
    in_flight_ = slots;
    for (int s = 0; s < slots; ++s) Launch(s);
  }

  const tx::TxStats& stats() const { return stats_; }
  const tx::ObjectReaderStats& reader_stats() const { return reader_stats_; }
  Errors& errors() { return errors_; }

 protected:
  virtual void Launch(int slot) = 0;

  void Ended(int slot) {
    if (EventLoop::Clock::now() < deadline_) return Launch(slot);
    if (--in_flight_ > 0) return;
    stats_ = Minus(ctx_->stats(), before_);
    reader_stats_ = ctx_->reader().stats();
    reader_stats_.reads -= reader_before_.reads;
    reader_stats_.retries_locked -= reader_before_.retries_locked;
    reader_stats_.retries_inconsistent -= reader_before_.retries_inconsistent;
    reader_stats_.retries_slow -= reader_before_.retries_slow;
    done_->Notify();
  }

  uint64_t Uniform(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  // `n` distinct indexes below `of`.
  std::vector<size_t> Pick(size_t n, size_t of) {
    std::vector<size_t> out;
    while (out.size() < n) {
      const size_t k = Uniform(of);
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
    }
    return out;
  }
  // Unique across the run: node, thread, counter; never 0.
  uint64_t NextValue() {
    return (uint64_t{node_->options().node_id} << 48) | (uint64_t{thread_} << 40) | ++counter_;
  }

  node::Node* const node_;
  const size_t thread_;
  Context* const ctx_;
  std::mt19937_64 rng_;
  Errors errors_;

 private:
  EventLoop::Clock::time_point deadline_;
  Notification* done_ = nullptr;
  int in_flight_ = 0;
  uint64_t counter_ = 0;
  tx::TxStats before_, stats_;
  tx::ObjectReaderStats reader_before_, reader_stats_;
};

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

// Part 2: transfers and audits in transactions, and lock-free readers.
//
// An audit reads every account, so any transfer that commits (or holds its locks) while
// it runs aborts it; under full load none would ever commit. Transfers therefore run
// in phases on the shared monotonic clock: busy (back to back) for kBusyMs of every
// kPhaseMs, calm (one transfer at a time per thread, with pauses) for the rest, so that
// audits commit while transfers still run, at a lower rate.
class BankDriver final : public Driver {
 public:
  static constexpr uint64_t kPhaseMs = 200, kBusyMs = 140;

  struct Counts {
    uint64_t transfers = 0, transfer_aborts = 0, unknown = 0;
    uint64_t audits = 0, audit_aborts = 0;
    uint64_t lock_free_reads = 0;
    uint64_t bad_copies = 0;  // checksum failures (never allowed)
  };

  // Slot 0 runs audits, slots [1, tx_slots) transfers, the rest lock-free reads.
  BankDriver(node::Node* node, size_t thread, uint64_t seed, const std::vector<FatPtr>* accounts,
             int tx_slots)
      : Driver(node, thread, seed), accounts_(accounts), tx_slots_(tx_slots) {}

  const Counts& counts() const { return counts_; }

 private:
  struct Attempt {
    int slot;
    TxHandle tx;
    std::vector<size_t> keys;
    std::vector<ObjBuf*> bufs;
    size_t pending = 0;
    absl::Status read_error;
  };

  void Launch(int slot) override {
    if (slot >= tx_slots_) return LaunchLockFree(slot);
    // In calm phases one transfer slot per thread pauses 20–60 ms between transfers
    // and the others wait for the next busy phase; audits, which hardly ever commit in
    // busy phases, pause there between attempts (a few are still tried under full load).
    const uint64_t phase_ms = HistoryChecker::NowNs() / 1000000 % kPhaseMs;
    const bool calm = phase_ms >= kBusyMs;
    absl::Duration pause = absl::ZeroDuration();
    if (slot == 0 && !calm) pause = absl::Milliseconds(2);
    if (slot == 1 && calm) pause = absl::Milliseconds(20 + Uniform(41));
    if (slot > 1 && calm) pause = absl::Milliseconds(kPhaseMs - phase_ms + Uniform(3));
    if (pause == absl::ZeroDuration()) return LaunchTx(slot);
    ctx_->loop().RunAfter(pause, [this, slot] { LaunchTx(slot); });
  }

  void LaunchTx(int slot) {
    auto a = std::make_shared<Attempt>();
    a->slot = slot;
    const bool audit = slot == 0;
    if (audit) {
      for (size_t i = 0; i < accounts_->size(); ++i) a->keys.push_back(i);
    } else {
      a->keys = Pick(2, accounts_->size());
    }
    a->bufs.assign(a->keys.size(), nullptr);
    a->pending = a->keys.size();
    a->tx = txCreate(*ctx_);
    for (size_t i = 0; i < a->keys.size(); ++i) {
      txRead(*a->tx, (*accounts_)[a->keys[i]], [this, a, i, audit](absl::StatusOr<ObjBuf*> o) {
        if (o.ok()) {
          a->bufs[i] = *o;
        } else {
          a->read_error.Update(o.status());
        }
        if (--a->pending > 0) return;
        if (!a->read_error.ok()) {
          txAbort(*a->tx);
          if (a->read_error.code() == absl::StatusCode::kAborted) {
            ++(audit ? counts_.audit_aborts : counts_.transfer_aborts);
          } else {
            errors_.Add(absl::StrCat("txRead failed: ", a->read_error.ToString()));
          }
          return Done(a);
        }
        audit ? Audit(a) : Transfer(a);
      });
    }
  }

  // Balances of the copies read; false (and an error) if one fails its checksum.
  bool Balances(const std::shared_ptr<Attempt>& a, std::vector<int64_t>* out) {
    for (size_t i = 0; i < a->keys.size(); ++i) {
      int64_t b;
      if (!LoadAccount(a->bufs[i]->data(), &b)) {
        ++counts_.bad_copies;
        errors_.Add(absl::StrCat("txRead of account ", (*accounts_)[a->keys[i]].ToString(),
                                 " returned a copy that fails its checksum"));
        return false;
      }
      out->push_back(b);
    }
    return true;
  }

  void Transfer(const std::shared_ptr<Attempt>& a) {
    std::vector<int64_t> b;
    if (!Balances(a, &b)) {
      txAbort(*a->tx);
      return Done(a);
    }
    const int64_t amount = std::min<int64_t>(b[0], 1 + static_cast<int64_t>(Uniform(100)));
    const uint64_t serial = NextValue();
    StoreAccount(a->bufs[0]->data(), b[0] - amount, serial);
    StoreAccount(a->bufs[1]->data(), b[1] + amount, serial);
    for (ObjBuf* o : a->bufs) {
      if (absl::Status s = txWrite(*a->tx, o); !s.ok()) {
        errors_.Add(absl::StrCat("txWrite: ", s.ToString()));
      }
    }
    txCommit(*a->tx, [this, a](absl::Status s) {
      if (s.ok()) {
        ++counts_.transfers;
      } else if (s.code() == absl::StatusCode::kAborted) {
        ++counts_.transfer_aborts;
      } else if (OutcomeUnknown(s)) {
        ++counts_.unknown;  // committed or not, the total is the same
      } else {
        errors_.Add(absl::StrCat("transfer commit: ", s.ToString()));
      }
      Done(a);
    });
  }

  void Audit(const std::shared_ptr<Attempt>& a) {
    auto balances = std::make_shared<std::vector<int64_t>>();
    if (!Balances(a, balances.get())) {
      txAbort(*a->tx);
      return Done(a);
    }
    txCommit(*a->tx, [this, a, balances](absl::Status s) {
      if (s.ok()) {
        ++counts_.audits;
        int64_t total = 0;
        for (int64_t b : *balances) total += b;
        const int64_t expected = kInitialBalance * static_cast<int64_t>(accounts_->size());
        if (total != expected) {
          errors_.Add(
              absl::StrFormat("a committed audit saw a total of %d, not %d", total, expected));
        }
      } else if (s.code() == absl::StatusCode::kAborted) {
        ++counts_.audit_aborts;
      } else {
        errors_.Add(absl::StrCat("audit commit: ", s.ToString()));
      }
      Done(a);
    });
  }

  void Done(const std::shared_ptr<Attempt>& a) {
    const int slot = a->slot;
    a->tx.reset();
    Ended(slot);
  }

  void LaunchLockFree(int slot) {
    const FatPtr p = (*accounts_)[Uniform(accounts_->size())];
    auto op = std::make_shared<LockFreeOp>(lockFreeStart(*ctx_));
    lockFreeRead(*op, p, [this, op, p, slot](absl::StatusOr<LockFreeObject> r) {
      int64_t balance;
      if (!r.ok()) {
        errors_.Add(absl::StrCat("lockFreeRead of ", p.ToString(), ": ", r.status().ToString()));
      } else if (!LoadAccount(r->data, &balance) || balance < 0) {
        ++counts_.bad_copies;
        errors_.Add(absl::StrCat("lockFreeRead of ", p.ToString(),
                                 " accepted a copy that fails its checksum"));
      } else {
        ++counts_.lock_free_reads;
      }
      op->End();
      Ended(slot);
    });
  }

  const std::vector<FatPtr>* const accounts_;
  const int tx_slots_;
  Counts counts_;
};

// Runs one driver per worker thread until `ms` have passed and waits for them.
template <typename D>
bool RunDrivers(node::Node& node, std::vector<std::unique_ptr<D>>& drivers, int64_t ms, int slots) {
  std::vector<std::unique_ptr<Notification>> done;
  const auto deadline = EventLoop::Clock::now() + std::chrono::milliseconds(ms);
  for (size_t t = 0; t < drivers.size(); ++t) {
    done.push_back(std::make_unique<Notification>());
    node.loop(t).Post([d = drivers[t].get(), deadline, slots, n = done.back().get()] {
      d->Start(deadline, slots, n);
    });
  }
  bool ok = true;
  for (auto& n : done)
    ok &= n->WaitForNotificationWithTimeout(absl::Milliseconds(ms) + absl::Seconds(60));
  return ok;
}

// Allocates `count` objects with sizes cycling through `sizes`, 8 per transaction, in
// transactions on thread 0 (single-machine commits here). Bank accounts start with
// kInitialBalance; part 1 objects with 0 (the history's initial value).
absl::StatusOr<std::vector<FatPtr>> Allocate(node::Node& node, bool bank, size_t count,
                                             const std::vector<uint32_t>& sizes) {
  std::vector<FatPtr> out;
  while (out.size() < count) {
    const size_t n = std::min<size_t>(8, count - out.size());
    std::vector<uint32_t> batch;
    for (size_t i = 0; i < n; ++i) batch.push_back(sizes[(out.size() + i) % sizes.size()]);
    using Result = absl::StatusOr<std::vector<FatPtr>>;
    Result ptrs = testing::RunInContext<Result>(node, [batch, bank](Context& ctx, auto finish) {
      struct State {
        TxHandle tx;
        std::vector<FatPtr> ptrs;
      };
      auto st = std::make_shared<State>();
      st->tx = txCreate(ctx);
      auto next = std::make_shared<std::function<void()>>();
      *next = [st, batch, bank, finish, next]() mutable {
        if (st->ptrs.size() == batch.size()) {
          txCommit(*st->tx, [st, finish, next](absl::Status s) mutable {
            *next = nullptr;  // breaks the cycle
            if (!s.ok()) return finish(s);
            finish(st->ptrs);
          });
          return;
        }
        txAlloc(*st->tx, batch[st->ptrs.size()], Addr(),
                [st, bank, finish, next](absl::StatusOr<ObjBuf*> o) mutable {
                  if (!o.ok()) {
                    *next = nullptr;
                    return finish(o.status());
                  }
                  if (bank) StoreAccount((*o)->data(), kInitialBalance, 0);
                  st->ptrs.push_back((*o)->ptr());
                  (*next)();
                });
      };
      (*next)();
    });
    if (!ptrs.ok()) {
      if (ptrs.status().code() == absl::StatusCode::kAborted) continue;
      return ptrs.status();
    }
    out.insert(out.end(), ptrs->begin(), ptrs->end());
  }
  return out;
}

// One read-only transaction over `objects`, retried until it commits (20 attempts).
// Returns the copies' payloads.
absl::StatusOr<std::vector<std::string>> ReadAll(node::Node& node,
                                                 const std::vector<FatPtr>& objects,
                                                 uint64_t* start_ns, uint64_t* end_ns) {
  using Result = absl::StatusOr<std::vector<std::string>>;
  Result r = absl::AbortedError("not run");
  for (int attempt = 0; attempt < 20 && r.status().code() == absl::StatusCode::kAborted;
       ++attempt) {
    *start_ns = HistoryChecker::NowNs();
    r = testing::RunInContext<Result>(node, [objects](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      auto out = std::make_shared<std::vector<std::string>>(objects.size());
      auto left = std::make_shared<size_t>(objects.size());
      auto failed = std::make_shared<absl::Status>();
      for (size_t i = 0; i < objects.size(); ++i) {
        txRead(*tx, objects[i], [=](absl::StatusOr<ObjBuf*> o) mutable {
          if (o.ok())
            (*out)[i].assign((*o)->data().data(), (*o)->data().size());
          else
            failed->Update(o.status());
          if (--*left > 0) return;
          if (!failed->ok()) {
            txAbort(*tx);
            return finish(*failed);
          }
          txCommit(*tx, [tx, out, finish](absl::Status s) mutable {
            if (!s.ok()) return finish(s);
            finish(*out);
          });
        });
      }
    });
    *end_ns = HistoryChecker::NowNs();
  }
  return r;
}

void PrintErrors(Errors& e) {
  for (const std::string& m : e.first) std::printf("ERROR %s\n", m.c_str());
  if (e.count > e.first.size()) std::printf("ERROR (%lu more)\n", e.count - e.first.size());
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
    const tx::TxStats& ds = d->stats();
    s.committed += ds.committed, s.aborted += ds.aborted, s.read_only += ds.read_only;
    s.single_machine += ds.single_machine, s.shipped += ds.shipped, s.distributed += ds.distributed;
    s.served_prepares += ds.served_prepares, s.served_single_machine += ds.served_single_machine;
  }
  out.close();
  std::printf(
      "DONE node=%u committed=%lu aborted=%lu unknown=%lu rmw=%lu ro=%lu lock_free=%lu "
      "read_aborts=%lu %s history=%s\n",
      id, c.committed, c.aborted, c.unknown, c.rmw_committed, c.read_only_committed, c.lock_free,
      c.read_aborts, FormatTxStats(s).c_str(), path.c_str());
  return 0;
}

int RunBank(node::Node& node, const std::vector<std::string>& w) {
  int64_t ms = 0;
  uint64_t seed = 0;
  if (w.size() < 3 || !absl::SimpleAtoi(w[1], &ms) || !absl::SimpleAtoi(w[2], &seed)) return 2;
  const std::vector<FatPtr> accounts = ParsePtrs(w, 3);
  const NodeId id = node.options().node_id;
  constexpr int kTxSlots = 5, kLockFreeSlots = 8;  // one audit, four transfers
  std::vector<std::unique_ptr<BankDriver>> drivers;
  for (size_t t = 0; t < node.thread_count(); ++t) {
    drivers.push_back(
        std::make_unique<BankDriver>(&node, t, seed * 1000 + id * 10 + t, &accounts, kTxSlots));
  }
  if (!RunDrivers(node, drivers, ms, kTxSlots + kLockFreeSlots)) {
    std::printf("ERROR node %u: the workload did not end in time\n", id);
    return 3;
  }
  BankDriver::Counts c;
  tx::TxStats s;
  uint64_t retries_locked = 0, retries_inconsistent = 0, retries_slow = 0;
  for (auto& d : drivers) {
    PrintErrors(d->errors());
    const BankDriver::Counts& dc = d->counts();
    c.transfers += dc.transfers, c.transfer_aborts += dc.transfer_aborts, c.unknown += dc.unknown;
    c.audits += dc.audits, c.audit_aborts += dc.audit_aborts;
    c.lock_free_reads += dc.lock_free_reads, c.bad_copies += dc.bad_copies;
    const tx::TxStats& ds = d->stats();
    s.committed += ds.committed, s.aborted += ds.aborted, s.read_only += ds.read_only;
    s.single_machine += ds.single_machine, s.shipped += ds.shipped, s.distributed += ds.distributed;
    s.served_prepares += ds.served_prepares, s.served_single_machine += ds.served_single_machine;
    retries_locked += d->reader_stats().retries_locked;
    retries_inconsistent += d->reader_stats().retries_inconsistent;
    retries_slow += d->reader_stats().retries_slow;
  }
  std::printf(
      "DONE node=%u transfers=%lu transfer_aborts=%lu unknown=%lu audits=%lu audit_aborts=%lu "
      "lock_free_reads=%lu bad_copies=%lu retries_locked=%lu retries_inconsistent=%lu "
      "retries_slow=%lu %s\n",
      id, c.transfers, c.transfer_aborts, c.unknown, c.audits, c.audit_aborts, c.lock_free_reads,
      c.bad_copies, retries_locked, retries_inconsistent, retries_slow, FormatTxStats(s).c_str());
  return 0;
}

// A node process: args node_id backend members dir listen.
FARM_CHILD_ROLE(tx_node) {
  if (args.size() != 5) return 2;
  node::NodeOptions o;
  if (!absl::SimpleAtoi(args[0], &o.node_id)) return 2;
  o.fabric = args[1];
  o.static_members = args[2];
  const std::string dir = args[3];
  if (o.fabric == "tcp") o.listen = args[4];
  o.data_dir = absl::StrCat(dir, "/node-", o.node_id);
  o.cluster_secret = kSecret;
  o.threads = 2;
  o.region_bytes = 32u << 20;
  o.capacity_bytes = 256u << 20;
  o.replication = 3;
  absl::StatusOr<std::unique_ptr<node::Node>> created = node::Node::Create(o);
  if (!created.ok()) {
    std::printf("ERROR create: %s\n", created.status().ToString().c_str());
    return 3;
  }
  node::Node& node = **created;
  if (absl::Status s = node.Start(); !s.ok()) {
    std::printf("ERROR start: %s\n", s.ToString().c_str());
    return 3;
  }
  // Linked to every peer, with a first region of its own.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  auto ready = [&] {
    for (NodeId peer = 1; peer <= kNodes; ++peer) {
      if (peer != o.node_id && !node.messenger().IsConnected(peer)) return false;
    }
    return !node.allocator().blocks().Regions().empty();
  };
  while (!ready() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  if (!ready()) {
    std::printf("ERROR node %u not linked to every peer within 30 s\n", o.node_id);
    return 3;
  }
  std::printf("READY\n");
  std::string line;
  int rc = 0;
  while (rc == 0 && std::getline(std::cin, line)) {
    const std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.empty()) continue;
    if (w[0] == "STOP") break;
    if (w[0] == "ALLOC" && w.size() >= 4) {
      size_t count = 0;
      std::vector<uint32_t> sizes;
      for (size_t i = 3; i < w.size(); ++i) {
        uint32_t s;
        if (absl::SimpleAtoi(w[i], &s)) sizes.push_back(s);
      }
      if (!absl::SimpleAtoi(w[2], &count) || sizes.empty()) return 2;
      absl::StatusOr<std::vector<FatPtr>> ptrs = Allocate(node, w[1] == "bank", count, sizes);
      if (!ptrs.ok()) {
        std::printf("ERROR alloc: %s\n", ptrs.status().ToString().c_str());
        return 3;
      }
      std::printf("OBJECTS %s\n", FormatPtrs(*ptrs).c_str());
    } else if (w[0] == "SER") {
      rc = RunSer(node, w, dir);
    } else if (w[0] == "SERFINAL") {
      HistoryTransaction t;
      const std::vector<FatPtr> objects = ParsePtrs(w, 1);
      absl::StatusOr<std::vector<std::string>> seen =
          ReadAll(node, objects, &t.start_ns, &t.end_ns);
      if (!seen.ok()) {
        std::printf("ERROR final read: %s\n", seen.status().ToString().c_str());
        return 3;
      }
      t.id = 1;  // no driver value has a zero node field
      for (size_t i = 0; i < objects.size(); ++i) {
        uint64_t v = 0;
        if (!LoadValue((*seen)[i], &v))
          std::printf("ERROR final read: %s mixes two values\n", objects[i].ToString().c_str());
        t.Read(objects[i].addr.raw(), v);
      }
      std::printf("FINAL %s\n", FormatTransaction(t).c_str());
    } else if (w[0] == "BANK") {
      rc = RunBank(node, w);
    } else if (w[0] == "AUDIT") {
      const std::vector<FatPtr> accounts = ParsePtrs(w, 1);
      uint64_t start, end;
      absl::StatusOr<std::vector<std::string>> seen = ReadAll(node, accounts, &start, &end);
      if (!seen.ok()) {
        std::printf("ERROR audit: %s\n", seen.status().ToString().c_str());
        return 3;
      }
      int64_t total = 0, negative = 0, bad = 0;
      for (const std::string& s : *seen) {
        int64_t b = 0;
        if (!LoadAccount(s, &b)) ++bad;
        if (b < 0) ++negative;
        total += b;
      }
      std::printf("AUDIT total=%ld negative=%ld bad=%ld\n", total, negative, bad);
    } else {
      std::printf("ERROR unknown command %s\n", w[0].c_str());
      return 2;
    }
  }
  node.Stop();
  std::printf("STOPPED\n");
  return rc;
}

// --- Parent side ---

class SerializabilityProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/farm-ser-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const std::string backend = GetParam();
    std::vector<std::string> entries, listen;
    for (int id = 1; id <= kNodes; ++id) {
      if (backend == "shm") {
        entries.push_back(absl::StrCat(id, "=shm:", dir_, "/node-", id, "/fabric.sock"));
        listen.push_back("-");
      } else {
        // A free port: taken, read and released (as NodeCluster does).
        absl::StatusOr<UniqueFd> fd = ListenTcp("127.0.0.1:0");
        ASSERT_TRUE(fd.ok()) << fd.status();
        absl::StatusOr<std::string> address = LocalTcpAddress(fd->get());
        ASSERT_TRUE(address.ok()) << address.status();
        entries.push_back(absl::StrCat(id, "=tcp:", *address));
        listen.push_back(*address);
      }
    }
    const std::string members = absl::StrJoin(entries, ",");
    const absl::Time start = absl::Now();
    for (int id = 1; id <= kNodes; ++id) {
      absl::StatusOr<ChildProcess> child = testing::SpawnChild(
          "tx_node", {absl::StrCat(id), backend, members, dir_, listen[id - 1]});
      ASSERT_TRUE(child.ok()) << child.status();
      nodes_.push_back(std::make_unique<ChildProcess>(std::move(*child)));
    }
    for (int id = 1; id <= kNodes; ++id) {
      absl::StatusOr<std::string> line = Node(id).ReadLine(absl::Seconds(40));
      ASSERT_TRUE(line.ok()) << "node " << id << ": " << line.status();
      ASSERT_EQ(*line, "READY") << "node " << id;
    }
    std::printf("%s: three node processes ready in %.2f s\n", backend.c_str(),
                absl::ToDoubleSeconds(absl::Now() - start));
  }

  void TearDown() override {
    for (auto& n : nodes_) (void)n->WriteLine("STOP");
    for (auto& n : nodes_) {
      absl::StatusOr<std::string> stopped = n->ReadLineStartingWith("STOPPED", absl::Seconds(20));
      EXPECT_TRUE(stopped.ok()) << stopped.status();
      absl::StatusOr<int> code = n->Wait(absl::Seconds(10));
      EXPECT_TRUE(code.ok() && *code == 0)
          << (code.ok() ? absl::StrCat("exit ", *code) : code.status().ToString());
    }
    nodes_.clear();
    if (HasFailure()) {
      std::printf("kept %s (histories, node data) for inspection\n", dir_.c_str());
    } else {
      std::filesystem::remove_all(dir_);
    }
  }

  ChildProcess& Node(int id) { return *nodes_[id - 1]; }

  // Each node allocates `per_node` objects; all of them, node 1's first.
  std::vector<FatPtr> AllocateEverywhere(const std::string& kind, size_t per_node,
                                         const std::vector<uint32_t>& sizes) {
    std::vector<FatPtr> all;
    for (int id = 1; id <= kNodes; ++id) {
      EXPECT_TRUE(Node(id)
                      .WriteLine(absl::StrCat("ALLOC ", kind, " ", per_node, " ",
                                              absl::StrJoin(sizes, " ")))
                      .ok());
    }
    for (int id = 1; id <= kNodes; ++id) {
      absl::StatusOr<std::string> line = Node(id).ReadLine(absl::Seconds(30));
      EXPECT_TRUE(line.ok() && absl::StartsWith(*line, "OBJECTS "))
          << "node " << id << ": " << (line.ok() ? *line : line.status().ToString());
      if (!line.ok()) continue;
      std::vector<FatPtr> ptrs = ParsePtrs(absl::StrSplit(*line, ' ', absl::SkipEmpty()), 1);
      EXPECT_EQ(ptrs.size(), per_node) << *line;
      all.insert(all.end(), ptrs.begin(), ptrs.end());
    }
    return all;
  }

  // Sends `command` to every node and collects their DONE lines; ERROR lines fail the test.
  std::vector<std::string> RunEverywhere(const std::string& command, int64_t ms) {
    for (int id = 1; id <= kNodes; ++id) EXPECT_TRUE(Node(id).WriteLine(command).ok());
    std::vector<std::string> done;
    for (int id = 1; id <= kNodes; ++id) {
      for (;;) {
        absl::StatusOr<std::string> line =
            Node(id).ReadLine(absl::Milliseconds(ms) + absl::Seconds(90));
        if (!line.ok()) {
          ADD_FAILURE() << "node " << id << ": " << line.status();
          done.push_back("");
          break;
        }
        if (absl::StartsWith(*line, "ERROR")) {
          ADD_FAILURE() << "node " << id << ": " << *line;
          continue;
        }
        if (absl::StartsWith(*line, "DONE")) {
          std::printf("  %s\n", line->c_str());
          done.push_back(*line);
          break;
        }
      }
    }
    return done;
  }

  static int64_t WorkloadMs(int64_t ms) {
    return std::max<int64_t>(
        300, static_cast<int64_t>(static_cast<double>(ms) * testing::StressScale()));
  }

  std::string dir_;
  std::vector<std::unique_ptr<ChildProcess>> nodes_;
};

// For a violation: each transaction the checker names (T<id> in its message), with
// what it was — lock-free read, read-only or read-modify-write transaction and, for
// the last, the commit path implied by where its keys live — its node and thread (from
// the id, see Driver::NextValue), times relative to the first one, and its operations
// with each key's primary. `owner` maps keys to the node that allocated them.
std::string DescribeViolation(const absl::Status& verdict, const HistoryChecker& checker,
                              const std::map<uint64_t, NodeId>& owner) {
  std::map<uint64_t, const HistoryTransaction*> by_id;
  for (const HistoryTransaction& t : checker.history()) by_id.emplace(t.id, &t);
  std::vector<uint64_t> named;
  const std::string message(verdict.message());
  for (size_t at = message.find('T'); at != std::string::npos; at = message.find('T', at + 1)) {
    size_t end = at + 1;
    while (end < message.size() && absl::ascii_isdigit(message[end])) ++end;
    uint64_t id;
    if (end > at + 1 && absl::SimpleAtoi(message.substr(at + 1, end - at - 1), &id) &&
        by_id.contains(id) && std::find(named.begin(), named.end(), id) == named.end()) {
      named.push_back(id);
    }
  }
  uint64_t first = UINT64_MAX;
  for (uint64_t id : named) first = std::min(first, by_id[id]->start_ns);
  std::string out;
  for (uint64_t id : named) {
    const HistoryTransaction& t = *by_id[id];
    const NodeId node = static_cast<NodeId>(id >> 48);
    std::vector<NodeId> primaries;
    bool writes = false;
    for (const HistoryOp& op : t.ops) {
      writes |= op.kind == HistoryOp::Kind::kWrite;
      auto it = owner.find(op.key);
      const NodeId p = it == owner.end() ? 0 : it->second;
      if (std::find(primaries.begin(), primaries.end(), p) == primaries.end())
        primaries.push_back(p);
    }
    std::string kind = id == 1                        ? "final read-only transaction"
                       : !writes && t.ops.size() == 1 ? "lock-free read"
                       : !writes                      ? "read-only transaction (validated)"
                       : primaries.size() > 1         ? "read-modify-write, distributed commit"
                       : primaries[0] == node
                           ? "read-modify-write, single-machine commit"
                           : absl::StrCat("read-modify-write, shipped to node ", primaries[0]);
    absl::StrAppendFormat(&out, "  T%d: node %d thread %d, %s, %s, [%+.1f us, %+.1f us]:", id, node,
                          (id >> 40) & 0xff, kind,
                          t.outcome == HistoryOutcome::kCommitted ? "committed" : "not committed",
                          static_cast<double>(t.start_ns - first) / 1e3,
                          static_cast<double>(t.end_ns - first) / 1e3);
    for (const HistoryOp& op : t.ops) {
      auto it = owner.find(op.key);
      absl::StrAppendFormat(&out, " %s(%x@node%d)=%d",
                            op.kind == HistoryOp::Kind::kRead ? "r" : "w", op.key,
                            it == owner.end() ? 0 : it->second, op.value);
    }
    out += "\n";
  }
  return out;
}

uint64_t Sum(const std::vector<std::string>& lines, absl::string_view key) {
  uint64_t n = 0;
  for (const std::string& l : lines) n += Field(l, key);
  return n;
}

TEST_P(SerializabilityProcessTest, StrictSerializability) {
  constexpr size_t kPerNode = 24;  // 72 keys
  const std::vector<FatPtr> objects = AllocateEverywhere(
      "ser", kPerNode, std::vector<uint32_t>(std::begin(kSerSizes), std::end(kSerSizes)));
  ASSERT_EQ(objects.size(), kPerNode * kNodes);
  const std::string ptrs = FormatPtrs(objects);
  const int64_t ms = WorkloadMs(6000);
  const absl::Time start = absl::Now();
  const std::vector<std::string> done = RunEverywhere(absl::StrCat("SER ", ms, " 7 ", ptrs), ms);
  const double run_s = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_FALSE(HasFailure());

  ASSERT_TRUE(Node(1).WriteLine("SERFINAL " + ptrs).ok());
  absl::StatusOr<std::string> final_line = Node(1).ReadLine(absl::Seconds(30));
  ASSERT_TRUE(final_line.ok()) << final_line.status();
  ASSERT_TRUE(absl::StartsWith(*final_line, "FINAL T ")) << *final_line;

  HistoryChecker checker;
  HistoryTransaction final_read;
  ASSERT_TRUE(ParseTransaction(final_line->substr(6), &final_read)) << *final_line;
  checker.Add(final_read);
  for (const std::string& line : done) {
    const size_t at = line.find("history=");
    ASSERT_NE(at, std::string::npos) << line;
    std::ifstream in(line.substr(at + 8));
    std::string t;
    size_t n = 0;
    while (std::getline(in, t)) {
      HistoryTransaction h;
      ASSERT_TRUE(ParseTransaction(t, &h)) << t;
      checker.Add(std::move(h));
      ++n;
    }
    EXPECT_GT(n, 0u) << line;
  }
  const absl::Time check_start = absl::Now();
  HistoryChecker::Stats stats;
  const absl::Status verdict = checker.Check(&stats);
  const double check_s = absl::ToDoubleSeconds(absl::Now() - check_start);

  const uint64_t committed = Sum(done, "committed"), aborted = Sum(done, "aborted");
  const uint64_t unknown = Sum(done, "unknown"), read_aborts = Sum(done, "read_aborts");
  const uint64_t attempts = committed + aborted + unknown;
  const uint64_t in_transactions = attempts - Sum(done, "lock_free");
  std::printf(
      "%s: %lu transactions in %.1f s (%lu keys): %lu committed (%lu read-modify-write, %lu "
      "read-only, "
      "%lu lock-free reads), %lu aborted (%.1f%% of all, %.1f%% of those not lock-free; %lu while "
      "reading), %lu outcome unknown\n"
      "  commit paths: single_machine=%lu shipped=%lu distributed=%lu read_only=%lu\n"
      "  checker: %zu checked, %zu aborted, %zu keys written (%zu chained), ww=%zu wr=%zu rw=%zu "
      "rt=%zu, "
      "%.2f s: %s\n",
      GetParam().c_str(), attempts, run_s, objects.size(), committed, Sum(done, "rmw"),
      Sum(done, "ro"), Sum(done, "lock_free"), aborted,
      attempts == 0 ? 0.0 : 100.0 * static_cast<double>(aborted) / attempts,
      in_transactions == 0 ? 0.0 : 100.0 * static_cast<double>(aborted) / in_transactions,
      read_aborts, unknown, Sum(done, "single_machine"), Sum(done, "shipped"),
      Sum(done, "distributed"), Sum(done, "read_only"), stats.committed, stats.aborted, stats.keys,
      stats.chained_keys, stats.ww_edges, stats.wr_edges, stats.rw_edges, stats.rt_edges, check_s,
      verdict.ok() ? "OK" : "VIOLATION");
  if (!verdict.ok()) {
    std::map<uint64_t, NodeId> owner;
    for (size_t i = 0; i < objects.size(); ++i)
      owner[objects[i].addr.raw()] = static_cast<NodeId>(1 + i / kPerNode);
    ADD_FAILURE() << verdict << "\nThe transactions named:\n"
                  << DescribeViolation(verdict, checker, owner);
  }
  EXPECT_GT(Sum(done, "rmw"), 0u);
  EXPECT_GT(aborted, 0u) << "no transaction aborted: the contention the test needs is missing";
  EXPECT_GT(Sum(done, "single_machine"), 0u);
  EXPECT_GT(Sum(done, "shipped"), 0u);
  EXPECT_GT(Sum(done, "distributed"), 0u);
}

TEST_P(SerializabilityProcessTest, BankTransfers) {
  constexpr size_t kPerNode = 16;  // 48 accounts
  const std::vector<FatPtr> accounts = AllocateEverywhere("bank", kPerNode, {kAccountBytes});
  ASSERT_EQ(accounts.size(), kPerNode * kNodes);
  const std::string ptrs = FormatPtrs(accounts);
  // At least a few calm phases (BankDriver), however small the scale.
  const int64_t ms = std::max<int64_t>(1000, WorkloadMs(6000));
  const absl::Time start = absl::Now();
  const std::vector<std::string> done = RunEverywhere(absl::StrCat("BANK ", ms, " 11 ", ptrs), ms);
  const double run_s = absl::ToDoubleSeconds(absl::Now() - start);

  ASSERT_TRUE(Node(2).WriteLine("AUDIT " + ptrs).ok());
  absl::StatusOr<std::string> audit = Node(2).ReadLine(absl::Seconds(30));
  ASSERT_TRUE(audit.ok()) << audit.status();
  const uint64_t expected = kInitialBalance * accounts.size();
  EXPECT_EQ(Field(*audit, "total"), expected) << *audit;
  EXPECT_TRUE(absl::StrContains(*audit, "negative=0 bad=0")) << *audit;

  const uint64_t transfers = Sum(done, "transfers"), transfer_aborts = Sum(done, "transfer_aborts");
  const uint64_t audits = Sum(done, "audits"), audit_aborts = Sum(done, "audit_aborts");
  const uint64_t lock_free = Sum(done, "lock_free_reads");
  std::printf(
      "%s: %.1f s, %zu accounts: %lu transfers committed, %lu aborted (%.1f%%), %lu unknown; %lu "
      "audits "
      "committed, %lu aborted; %lu lock-free reads (%.0f/s), %lu copies failed their checksum; "
      "reader "
      "retries: %lu locked, %lu inconsistent, %lu slow\n"
      "  commit paths: single_machine=%lu shipped=%lu distributed=%lu read_only=%lu; final %s\n",
      GetParam().c_str(), run_s, accounts.size(), transfers, transfer_aborts,
      transfers + transfer_aborts == 0
          ? 0.0
          : 100.0 * static_cast<double>(transfer_aborts) / (transfers + transfer_aborts),
      Sum(done, "unknown"), audits, audit_aborts, lock_free, static_cast<double>(lock_free) / run_s,
      Sum(done, "bad_copies"), Sum(done, "retries_locked"), Sum(done, "retries_inconsistent"),
      Sum(done, "retries_slow"), Sum(done, "single_machine"), Sum(done, "shipped"),
      Sum(done, "distributed"), Sum(done, "read_only"), audit->c_str());
  EXPECT_EQ(Sum(done, "bad_copies"), 0u);
  EXPECT_GT(transfers, 0u);
  EXPECT_GT(audits, 0u) << "no audit committed";
  EXPECT_GT(lock_free, 0u);
  EXPECT_GT(Sum(done, "distributed"), 0u);
  EXPECT_GT(Sum(done, "single_machine"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, SerializabilityProcessTest, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
