#include "tests/tx/serializability_bank.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/base/crc32c.h"
#include "tests/support/history_checker.h"
#include "tests/tx/serializability_driver.h"
#include "tests/tx/serializability_protocol.h"

namespace farm::tx::testing {

using farm::testing::HistoryChecker;

namespace {

constexpr size_t kCrcOffset = kAccountBytes - sizeof(uint32_t);

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
    // Lock-free reads that found their object locked (or torn) for the reader's whole
    // give_up_after (DeadlineExceeded): a stream of transfers on a hot account can starve
    // one on a loaded machine. Liveness, not a wrong answer: the test bounds their share.
    uint64_t lock_free_gave_up = 0;
    // The same for a transaction's txRead: the attempt ends as an abort does. A lock held
    // for over a second (a commit waiting on a stalled log sync, or a pause of the whole
    // machine: every node's readers give up at once) makes a few; the test bounds their
    // share.
    uint64_t read_gave_up = 0;
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
          } else if (absl::IsDeadlineExceeded(a->read_error)) {
            ++counts_.read_gave_up;
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
      if (absl::IsDeadlineExceeded(r.status())) {
        ++counts_.lock_free_gave_up;
      } else if (!r.ok()) {
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

}  // namespace

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
    c.lock_free_gave_up += dc.lock_free_gave_up, c.read_gave_up += dc.read_gave_up;
    Add(&s, d->stats());
    retries_locked += d->reader_stats().retries_locked;
    retries_inconsistent += d->reader_stats().retries_inconsistent;
    retries_slow += d->reader_stats().retries_slow;
  }
  std::printf(
      "DONE node=%u transfers=%lu transfer_aborts=%lu unknown=%lu audits=%lu audit_aborts=%lu "
      "lock_free_reads=%lu lock_free_gave_up=%lu read_gave_up=%lu bad_copies=%lu retries_locked=%lu "
      "retries_inconsistent=%lu retries_slow=%lu %s\n",
      id, c.transfers, c.transfer_aborts, c.unknown, c.audits, c.audit_aborts, c.lock_free_reads,
      c.lock_free_gave_up, c.read_gave_up, c.bad_copies, retries_locked, retries_inconsistent, retries_slow,
      FormatTxStats(s).c_str());
  return 0;
}

}  // namespace farm::tx::testing
