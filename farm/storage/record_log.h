// RecordLog: where a node's protocols append what must survive a crash — the seam
// between the layers that produce records (alloc's region and block-table changes, tx's
// prepares, decisions and commits) and the log that keeps them (LogWriter, or a test's
// recorder). Record types of the node log live in node_log_types.h.
//
// Contract: `durable` runs exactly once, after the record is durable as the log's policy
// promises or with the error that kept it from being so; records become durable in
// append order (a durable record implies every earlier one is). It may run on another
// thread and must be quick.
#ifndef FARM_STORAGE_RECORD_LOG_H_
#define FARM_STORAGE_RECORD_LOG_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace farm::storage {

class RecordLog {
 public:
  using Durable = absl::AnyInvocable<void(absl::Status)>;
  virtual ~RecordLog() = default;
  virtual void Append(uint8_t type, absl::string_view payload, Durable durable) = 0;
  // A record nobody waits for, whose loss in a crash is harmless (a commit decision that
  // replay presumes anyway): it keeps its place in the order of appends, but may reach
  // the file only with a later record, a sync, a rotation or the close.
  virtual void AppendUnwaited(uint8_t type, absl::string_view payload) {
    Append(type, payload, [](absl::Status) {});
  }
};

}  // namespace farm::storage

#endif  // FARM_STORAGE_RECORD_LOG_H_
