// LogWriter: appends records to a durable log (log_format.h). Under `always`, by group
// commit: appends from any thread go into a buffer; one flusher thread writes the
// buffer — every record that arrived while the previous write and sync ran — with one
// write and one sync, then reports each record durable. Under `interval` and `none` a
// record is durable (as promised) once written, so the appending thread writes it
// itself (one write, serialized) and reports it at once — no hand-off to another
// thread, which on a small machine costs more than the write — and, for `interval`, a
// syncer thread syncs every MS.
//
// The promise, by SyncPolicy (the --log_sync flag):
//   always        a record is reported durable after the sync that covers it: a crash
//                 (of the process or the machine) loses no reported record. The default.
//   interval:MS   reported once written to the file (the OS has it: a process crash
//                 loses nothing); synced every MS, so a machine crash loses at most the
//                 records of the last MS.
//   none          reported once written; never synced (cache mode): a machine crash may
//                 lose any record not yet written back by the OS.
//
// Errors: a failed write is undone (the file cut back to its last whole record) and
// reported to the records it carried — ResourceExhausted for a full disk, after which
// later appends may succeed. A failed sync is fatal for the log: it can no longer be
// trusted, so every record not yet reported, and every later one, gets the error
// (status() says which); the owner must stop acknowledging on it. The records of the
// write whose sync failed were written, though, and a restart may replay them: their
// error says so (MaybeDurable, record_log.h) — their outcome is unknown, not refused.
// OnFailure tells the owner the moment the log fails for good.
//
// Threads: Append from any thread. `durable` callbacks run in append order: under
// `always` on the flusher thread, never inside Append (except for an Append after
// Close, refused with FailedPrecondition at once); under `interval` and `none` inside
// Append, on the appending thread. They must be quick (post the rest). Close (and the
// destructor) writes what is queued, syncs unless the policy is none, and joins; call it
// from one thread.
//
// Unwaited records (RecordLog::AppendUnwaited) wait in memory, in their place among the
// appends, for the next write (under always: the next group write, which only a waited
// record starts), sync, rotation or close, so a commit decision costs no write and no
// sync of its own.
//
// Segments: Rotate(next) ends the current file — every record appended before Rotate
// began is in it, written and synced (whatever the policy) — and appends every later
// record to `next`, a new file with its own header. The closed file is then complete
// and never written again: a checkpoint can be built from it (farm/node/checkpointer.h).
#ifndef FARM_STORAGE_LOG_WRITER_H_
#define FARM_STORAGE_LOG_WRITER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "farm/base/mutex.h"
#include "farm/storage/file_system.h"
#include "farm/storage/log_format.h"
#include "farm/storage/record_log.h"

namespace farm::storage {

struct SyncPolicy {
  enum class Kind { kAlways, kInterval, kNone };
  Kind kind = Kind::kAlways;
  absl::Duration interval = absl::Milliseconds(1);  // kInterval only

  // "always", "interval:MS" (MS a positive integer) or "none"; InvalidArgument else.
  static absl::StatusOr<SyncPolicy> Parse(absl::string_view flag);
  std::string ToString() const;
};

struct LogWriterStats {
  uint64_t records = 0;
  uint64_t bytes = 0;   // record bytes written to the file
  uint64_t writes = 0;  // group writes
  uint64_t syncs = 0;
  uint64_t segment_bytes = 0;  // the current file's size: header and whole records
};

class LogWriter final : public RecordLog {
 public:

  // Opens the log at `path` for appending after its first `valid_bytes` — what ParseLog
  // of the existing file accepted (ParsedLog::valid_bytes); anything after it, a torn
  // tail, is cut off first, so pass 0 only for a file that is new or meant to be
  // emptied. A missing or empty file gets a header, synced. `identity` is written in a
  // new header.
  static absl::StatusOr<std::unique_ptr<LogWriter>> Open(FileSystem* fs, std::string path, uint64_t identity,
                                                         uint64_t valid_bytes, SyncPolicy policy);
  ~LogWriter() override;  // Close()
  LogWriter(const LogWriter&) = delete;
  LogWriter& operator=(const LogWriter&) = delete;

  // Queues a record; `durable` runs once it is durable as the policy promises, or with
  // the error that kept it from being so.
  void Append(uint8_t type, absl::string_view payload, Durable durable) override;
  // Kept in memory until the next write (no write or sync of its own; see above).
  void AppendUnwaited(uint8_t type, absl::string_view payload) override;
  // Ends the current file and continues in `next_path` (created with a synced header).
  // On error the current file stays in use (nothing is lost); a failed sync of the
  // current file fails the log, as any failed sync does.
  absl::Status Rotate(std::string next_path);
  void Close();

  absl::Status status() const;
  LogWriterStats stats() const;
  // `listener` runs once, the first time the log fails for good (a failed sync, or a
  // failed write that could not be undone: what status() then returns) — at once, here,
  // if it has failed already. It runs with the log's locks held, on whichever thread
  // found the failure: it must only hand off (no call back into the log). Set it once.
  void OnFailure(absl::AnyInvocable<void(const absl::Status&)> listener);

 private:
  LogWriter(FileSystem* fs, uint64_t identity, std::string path, std::unique_ptr<WritableFile> file,
            SyncPolicy policy);
  void FlushLoop();                // always: group commit
  void SyncLoop();                 // interval: a sync every MS
  void AppendDirect(uint8_t type, absl::string_view payload, Durable durable);  // interval, none
  // Writes one batch; returns the status its records get.
  absl::Status WriteBatch(const std::string& bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);
  // always: takes what is queued and writes it (the caller reports `batch`).
  absl::Status WriteQueued(std::vector<Durable>* batch, bool* closing) ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);
  // interval, none: writes the unwaited records ahead of `bytes` (or alone).
  absl::Status WriteWithUnwaited(std::string bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);
  absl::Status FailSync(const absl::Status& synced) ABSL_EXCLUSIVE_LOCKS_REQUIRED(file_mu_);
  // Fails the log for good with `error` (the first failure stands) and tells the listener.
  void FailLocked(absl::Status error) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  FileSystem* const fs_;
  const uint64_t identity_;
  const SyncPolicy policy_;
  // The file: one writer, syncer or rotation at a time. Under `always` the flusher holds
  // it from taking a batch until the batch is written, so batches reach the file (and
  // a rotation) in the order they were queued.
  Mutex file_mu_;
  std::string path_ ABSL_GUARDED_BY(file_mu_);
  std::unique_ptr<WritableFile> file_ ABSL_GUARDED_BY(file_mu_);

  mutable Mutex mu_;
  CondVar cv_;
  std::string buffer_ ABSL_GUARDED_BY(mu_);
  std::string unwaited_ ABSL_GUARDED_BY(mu_);  // interval, none: written before the next write
  std::vector<Durable> waiting_ ABSL_GUARDED_BY(mu_);
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  absl::AnyInvocable<void(const absl::Status&)> on_failure_ ABSL_GUARDED_BY(mu_);
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool dirty_ ABSL_GUARDED_BY(mu_) = false;  // interval: written since the last sync
  LogWriterStats stats_ ABSL_GUARDED_BY(mu_);
  std::thread flusher_;
};

}  // namespace farm::storage

#endif  // FARM_STORAGE_LOG_WRITER_H_
