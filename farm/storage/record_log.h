// RecordLog: where a node's protocols append what must survive a crash — the seam
// between the layers that produce records (alloc's region and block-table changes, tx's
// prepares, decisions and commits) and the log that keeps them (LogWriter, or a test's
// recorder). Record types of the node log live in node_log_types.h.
//
// Contract: `durable` runs exactly once, after the record is durable as the log's policy
// promises or with the error that kept it from being so — or, when MaybeDurable(error),
// that may not have: the record was written and the sync after it failed, so a restart
// may replay it, and its owner must take its outcome as unknown (neither durable nor
// refused). Records become durable in append order (a durable record implies every
// earlier one is). It may run on another thread and must be quick.
#ifndef FARM_STORAGE_RECORD_LOG_H_
#define FARM_STORAGE_RECORD_LOG_H_

#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/cord.h"
#include "absl/strings/string_view.h"

namespace farm::storage {

inline constexpr absl::string_view kMaybeDurablePayload = "farm.storage/maybe-durable";
// The error of a record that may be durable nonetheless (above).
inline absl::Status AsMaybeDurable(absl::Status error) {
  error.SetPayload(kMaybeDurablePayload, absl::Cord("written; its sync failed"));
  return error;
}
inline bool MaybeDurable(const absl::Status& s) { return !s.ok() && s.GetPayload(kMaybeDurablePayload).has_value(); }

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
