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
// The cluster harness is serializability_harness.h, the node processes and the line
// protocol between them serializability_node.cc and serializability_protocol.h, the
// workloads serializability_ser.h and serializability_bank.h. On a violation the test
// describes each transaction the checker names (kind, node, commit path, times,
// operations with each key's primary; serializability_history.h) and keeps the
// cluster's directory.
//
// Run time: 6 s of workload per test and backend at FARM_STRESS_SCALE=1 (about 30 s in
// all); the scale multiplies the workload time (0.05 under sanitizers; the bank runs at
// least 1 s).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/history_checker.h"
#include "tests/tx/serializability_bank.h"
#include "tests/tx/serializability_harness.h"
#include "tests/tx/serializability_history.h"
#include "tests/tx/serializability_protocol.h"
#include "tests/tx/serializability_ser.h"

namespace farm {
namespace {

using testing::HistoryChecker;
using testing::HistoryTransaction;
using tx::testing::DescribeViolation;
using tx::testing::Field;
using tx::testing::FormatPtrs;
using tx::testing::kAccountBytes;
using tx::testing::kInitialBalance;
using tx::testing::kNodes;
using tx::testing::kSerSizes;
using tx::testing::ParseTransaction;
using tx::testing::SerializabilityProcessTest;

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
  // A lock-free read gives up (DeadlineExceeded after 1 s of a locked object) only when
  // transfers keep its account locked on a loaded machine: rare, never the norm.
  const uint64_t gave_up = Sum(done, "lock_free_gave_up");
  EXPECT_LE(gave_up * 100, lock_free) << gave_up << " lock-free reads gave up on a locked account, of "
                                      << lock_free + gave_up;
  // A transaction's read gives up the same way when the account stays locked for over a
  // second (a stalled log sync, a pause of the machine): an aborted attempt, at most 2%.
  const uint64_t read_gave_up = Sum(done, "read_gave_up");
  const uint64_t attempts = transfers + transfer_aborts + audits + audit_aborts + read_gave_up;
  EXPECT_LE(read_gave_up * 50, attempts) << read_gave_up << " transactions' reads gave up on a locked account, of "
                                         << attempts << " attempts";
  EXPECT_GT(Sum(done, "distributed"), 0u);
  EXPECT_GT(Sum(done, "single_machine"), 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, SerializabilityProcessTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
