#include "farm/node/test_faults.h"

#include <signal.h>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace farm::node {
namespace {

// A single-machine commit writing two or more objects sends its record only to its first
// backup (`first`) or its last, and the process dies once that backup acknowledged it.
void CrashAfterOneBackup(NodeOptions* options, bool first) {
  options->tx.replication_hook = [first](tx::ReplicationEvent event, const tx::LogRecord& record,
                                         absl::Span<const NodeId> backups, NodeId backup) {
    if (record.entries.size() < 2 || backups.empty()) return true;
    if (backup != (first ? backups.front() : backups.back())) return false;
    if (event == tx::ReplicationEvent::kAcknowledged) ::raise(SIGKILL);
    return true;
  };
}

}  // namespace

absl::Status SetTestFault(absl::string_view names, NodeOptions* options) {
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    if (name == "single-machine-crash") {
      CrashAfterOneBackup(options, /*first=*/false);
    } else if (name == "single-machine-crash-first") {
      CrashAfterOneBackup(options, /*first=*/true);
    } else if (name == "hold-region-copies") {
      options->hold_region_copies = true;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "unknown test fault '%s' (known: single-machine-crash, single-machine-crash-first, hold-region-copies)",
          name));
    }
  }
  return absl::OkStatus();
}

}  // namespace farm::node
