#include "tests/tx/serializability_driver.h"

#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace farm::tx::testing {

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
  d.exclusive_single_machine = a.exclusive_single_machine - b.exclusive_single_machine;
  return d;
}

void Add(tx::TxStats* into, const tx::TxStats& s) {
  into->committed += s.committed;
  into->aborted += s.aborted;
  into->read_only += s.read_only;
  into->single_machine += s.single_machine;
  into->shipped += s.shipped;
  into->distributed += s.distributed;
  into->lock_free_reads += s.lock_free_reads;
  into->served_prepares += s.served_prepares;
  into->served_single_machine += s.served_single_machine;
  into->exclusive_single_machine += s.exclusive_single_machine;
}

std::string FormatTxStats(const tx::TxStats& s) {
  return absl::StrFormat(
      "tx_committed=%d tx_aborted=%d read_only=%d single_machine=%d shipped=%d distributed=%d "
      "served_prepares=%d served_single_machine=%d exclusive_single_machine=%d",
      s.committed, s.aborted, s.read_only, s.single_machine, s.shipped, s.distributed,
      s.served_prepares, s.served_single_machine, s.exclusive_single_machine);
}

void PrintErrors(Errors& e) {
  for (const std::string& m : e.first) std::printf("ERROR %s\n", m.c_str());
  if (e.count > e.first.size()) std::printf("ERROR (%lu more)\n", e.count - e.first.size());
}

}  // namespace farm::tx::testing
