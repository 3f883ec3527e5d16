// HistoryChecker on hand-written histories (serial and concurrent serializable ones
// pass; write skew, lost update, stale and fractured reads, dirty, intermediate and
// non-repeatable reads are caught), on the recording contract, and on 50,000 random
// transactions from a serial simulator, intact and with one read made stale.
#include "tests/support/history_checker.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr uint64_t kX = 0x1000;
constexpr uint64_t kY = 0x2000;

HistoryTransaction Tx(uint64_t id, uint64_t start, uint64_t end,
                      HistoryOutcome outcome = HistoryOutcome::kCommitted) {
  HistoryTransaction t;
  t.id = id;
  t.start_ns = start;
  t.end_ns = end;
  t.outcome = outcome;
  return t;
}

absl::Status Check(std::vector<HistoryTransaction> txns, HistoryChecker::Stats* stats = nullptr) {
  HistoryChecker checker;
  for (HistoryTransaction& t : txns) checker.Add(std::move(t));
  return checker.Check(stats);
}

void ExpectViolation(const absl::Status& s, const std::string& what) {
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr(what));
}

TEST(HistoryCheckerTest, EmptyHistoryPasses) { EXPECT_TRUE(HistoryChecker().Check().ok()); }

TEST(HistoryCheckerTest, SerialBankTransfersPass) {
  constexpr int kAccounts = 10;
  std::vector<uint64_t> balance_version(kAccounts, 0);
  std::mt19937_64 rng(1);
  std::vector<HistoryTransaction> txns;
  for (uint64_t id = 1; id <= 300; ++id) {
    HistoryTransaction t = Tx(id, id * 100, id * 100 + 50);
    if (id % 10 == 0) {  // an audit reads every account
      for (int a = 0; a < kAccounts; ++a) t.Read(0x100 * (a + 1), balance_version[a]);
    } else {
      const int from = static_cast<int>(rng() % kAccounts);
      const int to = (from + 1 + static_cast<int>(rng() % (kAccounts - 1))) % kAccounts;
      for (int a : {from, to}) t.Read(0x100 * (a + 1), balance_version[a]);
      for (int a : {from, to}) {
        t.Write(0x100 * (a + 1), id);
        balance_version[a] = id;
      }
    }
    txns.push_back(std::move(t));
  }
  HistoryChecker::Stats stats;
  absl::Status s = Check(std::move(txns), &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.committed, 300u);
  EXPECT_EQ(stats.keys, static_cast<size_t>(kAccounts));
  EXPECT_EQ(stats.chained_keys, static_cast<size_t>(kAccounts));  // previous = value read
  EXPECT_EQ(stats.violations, 0u);
  EXPECT_GT(stats.ww_edges, 0u);
  EXPECT_GT(stats.rw_edges, 0u);
  EXPECT_GT(stats.rt_edges, 0u);
}

TEST(HistoryCheckerTest, ConcurrentSerializableHistoryPasses) {
  // Serial order T2, T1, T3, T4, T5, with overlapping spans.
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 100).Read(kX, 0).Write(kX, 1));
  txns.push_back(Tx(2, 10, 60).Read(kX, 0).Read(kY, 0));
  txns.push_back(Tx(3, 50, 150).Read(kX, 1).Write(kY, 3, /*previous=*/0));
  txns.push_back(Tx(4, 120, 200).Read(kY, 3).Read(kX, 1));
  txns.push_back(Tx(5, 160, 170).Read(kY, 3));
  txns.push_back(Tx(6, 165, 180, HistoryOutcome::kAborted).Read(kY, 3).Write(kY, 6));
  HistoryChecker::Stats stats;
  absl::Status s = Check(std::move(txns), &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.committed, 5u);
  EXPECT_EQ(stats.aborted, 1u);
}

TEST(HistoryCheckerTest, WriteSkewIsAnRwCycle) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 100).Read(kX, 0).Read(kY, 0).Write(kX, 1));
  txns.push_back(Tx(2, 0, 100).Read(kX, 0).Read(kY, 0).Write(kY, 2));
  absl::Status s = Check(std::move(txns));
  ExpectViolation(s, "dependency cycle (G2) of 2 transactions");
  EXPECT_THAT(std::string(s.message()), HasSubstr("-rw-> T"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("keys {0x1000, 0x2000}"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("-ww->")));
}

TEST(HistoryCheckerTest, LostUpdateFromReadModifyWrite) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 100).Read(kX, 0).Write(kX, 1));
  txns.push_back(Tx(2, 0, 100).Read(kX, 0).Write(kX, 2));
  ExpectViolation(Check(std::move(txns)),
                  "lost update on key 0x1000: T1 and T2 both overwrote value 0");
}

TEST(HistoryCheckerTest, LostUpdateFromRecordedPreviousValues) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1, 0));
  txns.push_back(Tx(2, 20, 30).Write(kX, 2, 1));
  txns.push_back(Tx(3, 40, 50).Write(kX, 3, 1));  // T2's version is lost
  ExpectViolation(Check(std::move(txns)), "lost update on key 0x1000: T2 and T3");
}

TEST(HistoryCheckerTest, StaleReadAfterCommitViolatesRealTime) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1));
  txns.push_back(Tx(2, 20, 30).Read(kX, 0));
  absl::Status s = Check(std::move(txns));
  ExpectViolation(s, "G-single-realtime");
  EXPECT_THAT(std::string(s.message()), HasSubstr("T2 -rw-> T1"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("T1 -rt-> T2"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("ended at 10 ns, before T2 started at 20 ns"));

  // The same read while T1 is still running is fine.
  std::vector<HistoryTransaction> concurrent;
  concurrent.push_back(Tx(1, 0, 10).Write(kX, 1));
  concurrent.push_back(Tx(2, 5, 30).Read(kX, 0));
  EXPECT_TRUE(Check(std::move(concurrent)).ok());
}

TEST(HistoryCheckerTest, ReadFromTheFutureViolatesRealTime) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Read(kX, 2));
  txns.push_back(Tx(2, 20, 30).Write(kX, 2));
  ExpectViolation(Check(std::move(txns)), "G1c-realtime");
}

TEST(HistoryCheckerTest, DirtyReadOfAbortedWriter) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10, HistoryOutcome::kAborted).Write(kX, 1));
  txns.push_back(Tx(2, 5, 30).Read(kX, 1));
  ExpectViolation(Check(std::move(txns)),
                  "dirty read: T2 read key 0x1000 = 1, written by T1, which aborted");
}

TEST(HistoryCheckerTest, ReadOfAValueNobodyWrote) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Read(kX, 77));
  ExpectViolation(Check(std::move(txns)), "T1 read key 0x1000 = 77, which no transaction wrote");
}

TEST(HistoryCheckerTest, FracturedReadIsGSingle) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1).Write(kY, 1));
  txns.push_back(Tx(2, 0, 20).Read(kX, 1).Read(kY, 0));
  absl::Status s = Check(std::move(txns));
  ExpectViolation(s, "dependency cycle (G-single) of 2 transactions: T1 -wr-> T2 -rw-> T1");
  EXPECT_THAT(std::string(s.message()), HasSubstr("keys {0x1000, 0x2000}"));
}

TEST(HistoryCheckerTest, IntermediateRead) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1).Write(kX, 2));
  txns.push_back(Tx(2, 0, 20).Read(kX, 1));
  ExpectViolation(Check(std::move(txns)), "intermediate read: T2 read key 0x1000 = 1");
}

TEST(HistoryCheckerTest, NonRepeatableRead) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1));
  txns.push_back(Tx(2, 0, 20).Read(kX, 0).Read(kX, 1));
  ExpectViolation(Check(std::move(txns)), "non-repeatable read: T2 read key 0x1000 = 0 and then 1");
}

TEST(HistoryCheckerTest, ReadsOfOwnWrites) {
  std::vector<HistoryTransaction> ok;
  ok.push_back(Tx(1, 0, 10).Read(kX, 0).Write(kX, 1).Read(kX, 1).Write(kX, 2).Read(kX, 2));
  ok.push_back(Tx(2, 20, 30).Read(kX, 2));
  EXPECT_TRUE(Check(std::move(ok)).ok());

  std::vector<HistoryTransaction> missed;
  missed.push_back(Tx(1, 0, 10).Write(kX, 1).Read(kX, 0));
  ExpectViolation(Check(std::move(missed)), "it must see its own write");
}

TEST(HistoryCheckerTest, ReadThenOverwroteSomethingElse) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1, 0));
  txns.push_back(Tx(2, 0, 20).Read(kX, 0).Write(kX, 2, /*previous=*/1));
  ExpectViolation(Check(std::move(txns)), "T2 read key 0x1000 = 0 but its write overwrote 1");
}

TEST(HistoryCheckerTest, CycleOfPreviousValues) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1, 2));
  txns.push_back(Tx(2, 0, 10).Write(kX, 2, 1));
  ExpectViolation(Check(std::move(txns)), "do not descend from the initial value");
}

TEST(HistoryCheckerTest, BlindWritesOrderedByRealTime) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 10).Write(kX, 1));
  txns.push_back(Tx(2, 20, 30).Write(kX, 2));
  txns.push_back(Tx(3, 25, 50).Read(kX, 1));  // overlaps T2: may precede it
  HistoryChecker::Stats stats;
  absl::Status s = Check(txns, &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.real_time_keys, 1u);

  txns.push_back(Tx(4, 40, 50).Read(kX, 1));  // T2 ended at 30: stale
  ExpectViolation(Check(txns), "G-single-realtime");
}

TEST(HistoryCheckerTest, OverlappingBlindWritesCannotBeChecked) {
  std::vector<HistoryTransaction> txns;
  txns.push_back(Tx(1, 0, 100).Write(kX, 1));
  txns.push_back(Tx(2, 50, 150).Write(kX, 2));
  absl::Status s = Check(txns);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("cannot order the writes of T1 [0, 100]"));

  // Recording the previous values makes it checkable.
  txns[0].ops[0].previous = 0;
  txns[1].ops[0].previous = 1;
  HistoryChecker::Stats stats;
  s = Check(txns, &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.chained_keys, 1u);
}

TEST(HistoryCheckerTest, UnknownOutcomeIsCheckedWhenObserved) {
  std::vector<HistoryTransaction> seen;
  seen.push_back(Tx(1, 0, 0, HistoryOutcome::kUnknown).Write(kX, 1).Write(kY, 1));
  seen.push_back(Tx(2, 50, 60).Read(kX, 1));
  seen.push_back(Tx(3, 70, 80, HistoryOutcome::kUnknown).Write(kY, 3));  // never observed
  HistoryChecker::Stats stats;
  absl::Status s = Check(seen, &stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.unknown, 2u);
  EXPECT_EQ(stats.promoted, 1u);
  EXPECT_EQ(stats.committed, 2u);

  // Promoted, T1 committed: a later reader of y's initial value misses its write...
  seen.push_back(Tx(4, 55, 90).Read(kY, 0).Read(kX, 1));
  ExpectViolation(Check(seen), "G-single");
  // ...and a reader that finished before T1 started cannot see it.
  std::vector<HistoryTransaction> early;
  early.push_back(Tx(1, 20, 0, HistoryOutcome::kUnknown).Write(kX, 1));
  early.push_back(Tx(2, 0, 10).Read(kX, 1));
  ExpectViolation(Check(std::move(early)), "G1c-realtime");
}

TEST(HistoryCheckerTest, RecordingContractErrors) {
  std::vector<HistoryTransaction> duplicate;
  duplicate.push_back(Tx(1, 0, 10).Write(kX, 5));
  duplicate.push_back(Tx(2, 20, 30).Write(kX, 5));
  absl::Status s = Check(std::move(duplicate));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("values must be unique per key"));

  std::vector<HistoryTransaction> zero;
  zero.push_back(Tx(1, 0, 10).Write(kX, 0));
  EXPECT_EQ(Check(std::move(zero)).code(), absl::StatusCode::kInvalidArgument);

  std::vector<HistoryTransaction> backwards;
  backwards.push_back(Tx(1, 10, 5).Read(kX, 0));
  EXPECT_EQ(Check(std::move(backwards)).code(), absl::StatusCode::kInvalidArgument);

  // A retried attempt may reuse its value: the committed attempt is the writer.
  std::vector<HistoryTransaction> retried;
  retried.push_back(Tx(1, 0, 10, HistoryOutcome::kAborted).Write(kX, 5));
  retried.push_back(Tx(1, 20, 30).Write(kX, 5));
  retried.push_back(Tx(2, 40, 50).Read(kX, 5));
  EXPECT_TRUE(Check(std::move(retried)).ok());
}

TEST(HistoryCheckerTest, MergeCollectsPerThreadHistories) {
  // Each thread records its own transactions on keys of its own; one thread merges.
  constexpr int kThreads = 4;
  std::vector<HistoryChecker> per_thread(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([i, &recorder = per_thread[i]] {
      const uint64_t key = 0x100 * (i + 1);
      uint64_t current = 0;
      for (uint64_t n = 1; n <= 100; ++n) {
        const uint64_t id = i * 1000 + n;
        HistoryTransaction t = Tx(id, HistoryChecker::NowNs(), 0);
        t.Read(key, current).Write(key, id);
        current = id;
        t.end_ns = HistoryChecker::NowNs();
        recorder.Add(std::move(t));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  HistoryChecker all;
  for (HistoryChecker& c : per_thread) all.Merge(std::move(c));
  EXPECT_EQ(all.size(), 400u);
  HistoryChecker::Stats stats;
  absl::Status s = all.Check(&stats);
  EXPECT_TRUE(s.ok()) << s;
  EXPECT_EQ(stats.chained_keys, 4u);
}

// A serial simulator: transaction i takes effect at its serialization point 1000 + 10i,
// inside a random span of up to ±400 ns, so about 80 transactions overlap at a time;
// reads see the simulated state or their own writes; versions are installed in
// serialization order. 5% abort, 1% have an unknown outcome (half of those applied).
std::vector<HistoryTransaction> SimulateSerial(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr uint64_t kKeys = 2000;
  absl::flat_hash_map<uint64_t, uint64_t> state;
  std::vector<HistoryTransaction> txns;
  txns.reserve(n);
  for (int i = 0; i < n; ++i) {
    const uint64_t id = i + 1;
    const uint64_t point = 1000 + 10 * static_cast<uint64_t>(i);
    HistoryTransaction t =
        Tx(id, point - rng() % 400, point + rng() % 400, HistoryOutcome::kCommitted);
    const int fate = static_cast<int>(rng() % 100);
    if (fate < 5) t.outcome = HistoryOutcome::kAborted;
    if (fate == 5 || fate == 6) t.outcome = HistoryOutcome::kUnknown;
    const bool applied = fate >= 6;
    absl::flat_hash_map<uint64_t, uint64_t> own;  // key -> value written
    uint64_t op = 0;
    auto key = [&] { return 0x10000 + 64 * (rng() % kKeys); };
    auto seen = [&](uint64_t k) {
      auto it = own.find(k);
      return it != own.end() ? it->second : state[k];
    };
    auto write = [&](uint64_t k, bool record_previous) {
      const uint64_t value = id << 4 | op++;
      // The previous value is what the commit overwrites: the state at the serialization
      // point, since nothing else is installed in between.
      std::optional<uint64_t> previous;
      if (record_previous) previous = state[k];
      t.Write(k, value, previous);
      own[k] = value;
    };
    if (rng() % 4 == 0) {  // a lock-free read
      const uint64_t k = key();
      t.Read(k, seen(k));
    } else {
      while (t.ops.size() < 4) {
        const int kind = static_cast<int>(rng() % 100);
        const uint64_t k = !own.empty() && kind >= 90 ? own.begin()->first : key();
        if (kind < 45) {
          t.Read(k, seen(k));
        } else if (kind < 80) {  // read-modify-write: previous inferred from the read
          t.Read(k, seen(k));
          write(k, /*record_previous=*/false);
        } else if (kind < 90) {  // blind write, previous reported by the system
          write(k, /*record_previous=*/true);
        } else {  // reread or rewrite a key this transaction wrote
          if (rng() % 2 == 0) {
            t.Read(k, seen(k));
          } else {
            write(k, /*record_previous=*/true);
          }
        }
      }
    }
    if (applied) {
      for (const auto& [k, v] : own) state[k] = v;
    }
    txns.push_back(std::move(t));
  }
  return txns;
}

TEST(HistoryCheckerTest, FiftyThousandRandomSerialTransactions) {
  std::vector<HistoryTransaction> txns = SimulateSerial(50000, 42);
  size_t ops = 0;
  for (const HistoryTransaction& t : txns) ops += t.ops.size();
  HistoryChecker checker;
  for (const HistoryTransaction& t : txns) checker.Add(t);
  HistoryChecker::Stats stats;
  const auto begin = std::chrono::steady_clock::now();
  absl::Status s = checker.Check(&stats);
  const auto elapsed = std::chrono::steady_clock::now() - begin;
  EXPECT_TRUE(s.ok()) << s;
  std::printf(
      "checked %zu transactions (%zu operations) in %.1f ms: committed %zu, aborted %zu, "
      "unknown %zu (promoted %zu), keys %zu (chained %zu, real-time %zu), edges ww %zu "
      "wr %zu rw %zu rt %zu, nodes %zu\n",
      txns.size(), ops, std::chrono::duration<double, std::milli>(elapsed).count(), stats.committed,
      stats.aborted, stats.unknown, stats.promoted, stats.keys, stats.chained_keys,
      stats.real_time_keys, stats.ww_edges, stats.wr_edges, stats.rw_edges, stats.rt_edges,
      stats.graph_nodes);
  EXPECT_GT(stats.committed, 45000u);
  EXPECT_EQ(stats.unordered_keys, 0u);
  EXPECT_GT(stats.promoted, 0u);

  // Make one late read of a written value see the version before it instead: the
  // reader started long after that version's writer committed, so this is stale, a cycle
  // reader -rw-> writer -rt-> reader.
  absl::flat_hash_map<std::pair<uint64_t, uint64_t>, size_t> writer;  // (key, value)
  for (size_t i = 0; i < txns.size(); ++i) {
    for (const HistoryOp& op : txns[i].ops) {
      if (op.kind == HistoryOp::Kind::kWrite) writer[{op.key, op.value}] = i;
    }
  }
  bool mutated = false;
  for (size_t i = 40000; i < txns.size() && !mutated; ++i) {
    HistoryTransaction& t = txns[i];
    if (t.outcome != HistoryOutcome::kCommitted || t.ops.size() != 4) continue;
    HistoryOp& op = t.ops[0];
    if (op.kind != HistoryOp::Kind::kRead || op.value == 0) continue;
    bool writes_key = false;  // then the stale read would also be a lost update
    for (const HistoryOp& other : t.ops) {
      writes_key |= other.kind == HistoryOp::Kind::kWrite && other.key == op.key;
    }
    if (writes_key) continue;
    const HistoryTransaction& w = txns[writer.at({op.key, op.value})];
    if (w.outcome != HistoryOutcome::kCommitted || w.end_ns + 1000 > t.start_ns) continue;
    // The version before: what w overwrote (recorded, or read before writing).
    std::optional<uint64_t> before;
    for (const HistoryOp& wop : w.ops) {
      if (wop.key != op.key) continue;
      if (wop.kind == HistoryOp::Kind::kWrite && wop.previous.has_value()) before = wop.previous;
      if (wop.kind == HistoryOp::Kind::kRead && !before.has_value()) before = wop.value;
      if (wop.kind == HistoryOp::Kind::kWrite) break;
    }
    if (!before.has_value()) continue;
    std::printf("made T%lu read key %#lx = %lu instead of %lu (written by T%lu)\n",
                static_cast<unsigned long>(t.id), static_cast<unsigned long>(op.key),
                static_cast<unsigned long>(*before), static_cast<unsigned long>(op.value),
                static_cast<unsigned long>(w.id));
    op.value = *before;
    mutated = true;
  }
  ASSERT_TRUE(mutated);
  HistoryChecker broken;
  for (HistoryTransaction& t : txns) broken.Add(std::move(t));
  s = broken.Check();
  ExpectViolation(s, "dependency cycle (G-single");
  std::printf("%s\n", std::string(s.message()).c_str());
}

}  // namespace
}  // namespace farm::testing
