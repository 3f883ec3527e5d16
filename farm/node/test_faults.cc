#include "farm/node/test_faults.h"

#include <signal.h>

#include "absl/strings/str_format.h"

namespace farm::node {

absl::Status SetTestFault(absl::string_view name, NodeOptions* options) {
  if (name.empty()) return absl::OkStatus();
  if (name == "single-machine-crash") {
    options->tx.replication_hook = [](tx::ReplicationEvent event, const tx::LogRecord& record,
                                      absl::Span<const NodeId> backups, NodeId backup) {
      if (record.entries.size() < 2 || backups.empty()) return true;
      if (backup != backups.back()) return false;
      if (event == tx::ReplicationEvent::kAcknowledged) ::raise(SIGKILL);
      return true;
    };
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrFormat("unknown test fault '%s' (known: single-machine-crash)", name));
}

}  // namespace farm::node
