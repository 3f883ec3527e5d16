// A transaction coordinator that dies half-way through a commit, for
// coordinator_crash_test: it joins the cluster as a compute-only member (a short
// ZooKeeper session, so the cluster drops it soon after it dies), transfers --amount
// from the first account of --accounts to the second with sequence number --seq (a
// distributed transaction: the accounts have different primaries), and SIGKILLs
// itself at --step of that commit (tx::CommitStep: prepared, decided, backups-sent,
// backups (acknowledged), primaries).
// Exits 3 when the commit never reached the step (e.g. it was not distributed).
//
// --accounts: a file with two lines "raw-address size incarnation".
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "farm/base/command_line.h"
#include "tests/failover/transfer.h"
#include "tools/common/compute_member.h"

ABSL_FLAG(std::string, zookeeper, "", "the cluster's ZooKeeper");
ABSL_FLAG(std::string, cluster, "farm", "the cluster's name");
ABSL_FLAG(std::string, secret_file, "", "the cluster's secret");
ABSL_FLAG(std::string, fabric, "shm", "fabric");
ABSL_FLAG(std::string, accounts, "", "the two accounts (see the file comment)");
ABSL_FLAG(std::string, step, "backups", "where to die: prepared, decided, backups-sent, backups, primaries");
ABSL_FLAG(int64_t, amount, 7, "the amount moved");
ABSL_FLAG(int64_t, seq, 1, "the transfer's sequence number");

namespace {

bool ParseStep(const std::string& name, farm::tx::CommitStep* step) {
  using farm::tx::CommitStep;
  if (name == "prepared") *step = CommitStep::kPrepared;
  else if (name == "decided") *step = CommitStep::kDecidedCommit;
  else if (name == "backups-sent") *step = CommitStep::kCommitBackupSent;
  else if (name == "backups") *step = CommitStep::kCommitBackupsAcked;
  else if (name == "primaries") *step = CommitStep::kCommitPrimarySent;
  else return false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "crash_coordinator: dies at a chosen step of a distributed commit");
  farm::tx::CommitStep die_at;
  if (!ParseStep(absl::GetFlag(FLAGS_step), &die_at)) {
    std::fprintf(stderr, "crash_coordinator: unknown --step\n");
    return 2;
  }
  farm::FatPtr accounts[2];
  {
    std::ifstream in(absl::GetFlag(FLAGS_accounts));
    for (farm::FatPtr& p : accounts) {
      uint64_t raw = 0;
      in >> raw >> p.size >> p.incarnation;
      p.addr = farm::Addr::FromRaw(raw);
    }
    if (!in) {
      std::fprintf(stderr, "crash_coordinator: cannot read %s\n", absl::GetFlag(FLAGS_accounts).c_str());
      return 2;
    }
  }
  farm::tools::ComputeMemberOptions o;
  o.zookeeper = absl::GetFlag(FLAGS_zookeeper);
  o.cluster = absl::GetFlag(FLAGS_cluster);
  o.secret_file = absl::GetFlag(FLAGS_secret_file);
  o.fabric = absl::GetFlag(FLAGS_fabric);
  o.threads = 1;
  o.session_timeout = absl::Seconds(1);
  o.tx.commit_step_hook = [die_at](farm::tx::CommitStep step, uint64_t transaction) {
    if (step != die_at) return;
    std::printf("dying at step %d of transaction %lx\n", static_cast<int>(step),
                static_cast<unsigned long>(transaction));
    std::fflush(stdout);
    ::raise(SIGKILL);
  };
  auto member = farm::tools::ComputeMember::Join(o);
  if (!member.ok()) {
    std::fprintf(stderr, "crash_coordinator: %s\n", member.status().ToString().c_str());
    return 2;
  }
  // Retried as any application must (Aborted: e.g. a node that has not yet seen the
  // configuration this member joined in), until the commit reaches the step.
  absl::Status s;
  for (int attempt = 0; attempt < 200; ++attempt) {
    s = farm::testing::Transfer((*member)->node(), accounts[0], accounts[1], absl::GetFlag(FLAGS_amount),
                                absl::GetFlag(FLAGS_seq));
    if (!absl::IsAborted(s) && !absl::IsUnavailable(s)) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  std::printf("the transfer ended without reaching the step: %s\n", s.ToString().c_str());
  return 3;
}
