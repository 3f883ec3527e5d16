// HistoryChecker: decides whether a recorded history of transactions is strictly
// serializable (issue 5). Tests of the transaction layer record what every transaction
// read and wrote and when it ran, then ask the checker; it builds the dependency graph
// (write-write, write-read, read-write and real-time edges) and fails on any cycle.
//
// Model.
//   - Objects are named by uint64 keys (e.g. raw addresses). Each committed transaction
//     that writes an object installs one new version of it: the value of its last write
//     to that key. Earlier writes to the same key in the same transaction are
//     "intermediate" and must never be seen by others.
//   - A version is named by the value its writer wrote. The harness must write values
//     that are unique per key across all transactions and all attempts (e.g. the
//     transaction id, or id << 8 | operation index), and never 0: every key starts at
//     the "initial" version, value 0. If an aborted attempt and a committed transaction
//     wrote the same value, the committed one is taken as the writer (so a dirty read of
//     a retried attempt is only caught if attempts write distinct values).
//   - A transaction's time span [start_ns, end_ns] is on one monotonic clock shared by
//     all recorders (NowNs()): start before its first operation was issued, end after its
//     commit (or, for a read-only transaction or lock-free read, its last read) was
//     acknowledged. T1 precedes T2 in real time iff T1.end_ns < T2.start_ns.
//   - Outcomes: kCommitted transactions are checked. kAborted ones are ignored, except
//     that a checked transaction that read one of their values is a dirty read.
//     kUnknown (the harness does not know: e.g. the coordinator failed before answering)
//     ones are checked as committed, with an unbounded end, if a checked transaction
//     observed one of their installed values (read it, or overwrote it); otherwise they
//     are ignored like aborted ones.
//   - Operations are recorded in program order. A read returns the value seen. A write
//     may carry `previous`: the value it overwrote at commit, if the system can report
//     it (e.g. the object the commit locked). Values a transaction reads after writing
//     the same key must be its own latest write.
//
// Version order. The order of each key's versions is inferred:
//   - If every installed write of a key knows the value it overwrote, the versions form a
//     chain from 0. A write's previous is its `previous` field or, failing that, the value
//     its own transaction read from the key before writing it (in any serializable
//     execution a read-modify-write overwrites exactly what it read). Two writes that
//     overwrote the same value are a lost update; a chain that does not start at 0 (a
//     cycle of previous values), or overwrites a value no committed transaction
//     installed, is a violation.
//   - Otherwise (some blind write without `previous`) the writes are ordered by real
//     time, which is only possible if each ends before the next starts. If two such
//     writes overlap, the key's order is ambiguous and Check() reports that the history
//     cannot be checked (InvalidArgument), never a pass.
//
// Checks. Check() reports, for committed (and promoted) transactions:
//   - reads of a value no transaction wrote, of an aborted transaction's value (dirty
//     read), of another transaction's intermediate value, or of one's own value before
//     writing it;
//   - a transaction that read two different values of a key without writing it between
//     (non-repeatable read), or read something other than its own latest write;
//   - a transaction that read a key and then overwrote a different value of it;
//   - lost updates and broken version chains as above, and, for keys ordered by real
//     time, a recorded `previous` that is not the version before in that order;
//   - any cycle in the graph with edges ww (a version's writer -> the next version's
//     writer), wr (writer of a value -> its reader), rw (reader of a version -> writer of
//     the next version) and rt (T1 ended before T2 started). One cycle is reported, with
//     its transactions, edge kinds, values and keys: the one with the fewest
//     transactions through one of the first 16 transactions of a strongly connected
//     component. It is named in Adya/Elle terms: G0 (ww only), G1c (ww/wr), G-single
//     (one rw: read skew, fractured or stale read), G2 (several rw: write skew), with
//     "-realtime" if it needs rt edges.
//
// Return codes of Check():
//   - InvalidArgument, before anything is checked, if the history breaks the recording
//     contract: a value written to a key by two transactions that did not abort, a
//     written value of 0, a committed transaction with start after end, two committed
//     transactions with one id, two different `previous` values for one key.
//   - FailedPrecondition if it is not strictly serializable: the message lists the
//     violations (the cycle first, then at most 9 more, and how many were left out).
//   - InvalidArgument if no violation was found but some key's version order was
//     ambiguous, so the history cannot be fully checked; the message names the keys.
//   - OK if the history is strictly serializable.
//
// Cost: O(n log n) in the number of operations; real-time edges go through a chain of
// barrier nodes (one per group of ends between two starts), so there are O(n) of them.
// 50,000 transactions of ~3.5 operations check in about 0.1 s (RelWithDebInfo). No
// recursion: Tarjan's algorithm and the cycle search are iterative.
//
// Threads: a HistoryChecker is a value, like std::vector: Add and Merge need exclusive
// access; const members may run concurrently. To record from many threads, give each
// thread its own HistoryChecker (or vector) and Merge them on one thread at the end.
#ifndef FARM_TESTS_SUPPORT_HISTORY_CHECKER_H_
#define FARM_TESTS_SUPPORT_HISTORY_CHECKER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"

namespace farm::testing {

struct HistoryOp {
  enum class Kind : uint8_t { kRead, kWrite };

  static HistoryOp Read(uint64_t key, uint64_t value) {
    return HistoryOp{Kind::kRead, key, value, std::nullopt};
  }
  static HistoryOp Write(uint64_t key, uint64_t value,
                         std::optional<uint64_t> previous = std::nullopt) {
    return HistoryOp{Kind::kWrite, key, value, previous};
  }

  Kind kind = Kind::kRead;
  uint64_t key = 0;
  uint64_t value = 0;  // read: the value seen; write: the value written
  // Writes only: the value overwritten at commit, if the system reports it. For a key a
  // transaction writes several times, set it on any of those writes (they must agree).
  std::optional<uint64_t> previous;
};

enum class HistoryOutcome : uint8_t { kCommitted, kAborted, kUnknown };

struct HistoryTransaction {
  // Builders, for brevity in tests: t.Read(k, v).Write(k, w).
  HistoryTransaction& Read(uint64_t key, uint64_t value) {
    ops.push_back(HistoryOp::Read(key, value));
    return *this;
  }
  HistoryTransaction& Write(uint64_t key, uint64_t value,
                            std::optional<uint64_t> previous = std::nullopt) {
    ops.push_back(HistoryOp::Write(key, value, previous));
    return *this;
  }

  uint64_t id = 0;        // for messages; unique among committed transactions
  uint64_t start_ns = 0;  // before the first operation was issued
  uint64_t end_ns = 0;    // after the commit was acknowledged (ignored for kUnknown)
  HistoryOutcome outcome = HistoryOutcome::kCommitted;
  std::vector<HistoryOp> ops;  // in program order
};

class HistoryChecker {
 public:
  struct Stats {
    size_t committed = 0;  // checked transactions, promoted kUnknown ones included
    size_t aborted = 0;
    size_t unknown = 0;         // recorded with kUnknown
    size_t promoted = 0;        // of those, observed by others and so checked
    size_t keys = 0;            // keys with at least one committed write
    size_t chained_keys = 0;    // ordered by previous values
    size_t real_time_keys = 0;  // ordered by real time
    size_t unordered_keys = 0;  // ambiguous or broken: no ww/rw edges
    size_t ww_edges = 0;
    size_t wr_edges = 0;
    size_t rw_edges = 0;
    size_t rt_edges = 0;     // edges into and out of barrier nodes
    size_t graph_nodes = 0;  // transactions plus barriers
    size_t violations = 0;   // a cycle counts as one
  };

  // The steady clock, in nanoseconds, for start_ns and end_ns.
  static uint64_t NowNs();

  void Add(HistoryTransaction t) { history_.push_back(std::move(t)); }
  void Merge(HistoryChecker&& other);

  // See the header comment for what is checked and the codes returned. `stats`, if not
  // null, is filled in whatever the outcome.
  absl::Status Check(Stats* stats = nullptr) const;

  const std::vector<HistoryTransaction>& history() const { return history_; }
  size_t size() const { return history_.size(); }

 private:
  std::vector<HistoryTransaction> history_;
};

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_HISTORY_CHECKER_H_
