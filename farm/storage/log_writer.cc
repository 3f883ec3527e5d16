#include "farm/storage/log_writer.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "farm/base/log.h"

namespace farm::storage {

absl::StatusOr<SyncPolicy> SyncPolicy::Parse(absl::string_view flag) {
  SyncPolicy p;
  if (flag == "always") return p;
  if (flag == "none") {
    p.kind = Kind::kNone;
    return p;
  }
  int64_t ms = 0;
  if (absl::ConsumePrefix(&flag, "interval:") && absl::SimpleAtoi(flag, &ms) && ms > 0) {
    p.kind = Kind::kInterval;
    p.interval = absl::Milliseconds(ms);
    return p;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--log_sync=", flag, ": always, interval:MS (MS > 0) or none"));
}

std::string SyncPolicy::ToString() const {
  switch (kind) {
    case Kind::kAlways:
      return "always";
    case Kind::kInterval:
      return absl::StrCat("interval:", absl::ToInt64Milliseconds(interval));
    case Kind::kNone:
      return "none";
  }
  return "?";
}

namespace {

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

absl::StatusOr<std::unique_ptr<WritableFile>> OpenWithHeader(FileSystem* fs, const std::string& path,
                                                             uint64_t identity, uint64_t valid_bytes) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = fs->OpenForAppend(path);
  if (!file.ok()) return file.status();
  if ((*file)->size() > valid_bytes) {
    // A torn tail (or the bytes of a write that failed): appending goes after whole records.
    if (absl::Status s = fs->Truncate(path, valid_bytes); !s.ok()) return s;
    file = fs->OpenForAppend(path);
    if (!file.ok()) return file.status();
  }
  if ((*file)->size() == 0) {
    if (absl::Status s = (*file)->Append(EncodeLogHeader(identity)); !s.ok()) return s;
    if (absl::Status s = (*file)->Sync(); !s.ok()) return s;
    // A new file's name is durable only once its directory is synced.
    if (absl::Status s = fs->SyncDir(Dirname(path)); !s.ok()) return s;
  }
  return file;
}

}  // namespace

absl::StatusOr<std::unique_ptr<LogWriter>> LogWriter::Open(FileSystem* fs, std::string path, uint64_t identity,
                                                           uint64_t valid_bytes, SyncPolicy policy) {
  absl::StatusOr<std::unique_ptr<WritableFile>> file = OpenWithHeader(fs, path, identity, valid_bytes);
  if (!file.ok()) return file.status();
  std::unique_ptr<LogWriter> w(new LogWriter(fs, identity, std::move(path), std::move(*file), policy));
  switch (policy.kind) {
    case SyncPolicy::Kind::kAlways:
      w->flusher_ = std::thread([raw = w.get()] { raw->FlushLoop(); });
      break;
    case SyncPolicy::Kind::kInterval:
      w->flusher_ = std::thread([raw = w.get()] { raw->SyncLoop(); });
      break;
    case SyncPolicy::Kind::kNone:
      break;  // nothing to sync
  }
  return w;
}

LogWriter::LogWriter(FileSystem* fs, uint64_t identity, std::string path, std::unique_ptr<WritableFile> file,
                     SyncPolicy policy)
    : fs_(fs), identity_(identity), policy_(policy), path_(std::move(path)), file_(std::move(file)) {
  stats_.segment_bytes = file_->size();
}

LogWriter::~LogWriter() { Close(); }

namespace {

absl::Status OversizeRecord(size_t bytes) {
  return absl::InvalidArgumentError(
      absl::StrCat("a log record of ", bytes, " bytes is over the log's limit of ", kMaxRecordBytes));
}

}  // namespace

void LogWriter::Append(uint8_t type, absl::string_view payload, Durable durable) {
  if (policy_.kind != SyncPolicy::Kind::kAlways) return AppendDirect(type, payload, std::move(durable));
  {
    MutexLock lock(&mu_);
    if (!closing_) {
      if (payload.size() > kMaxRecordBytes) {
        // Refused, in its place among the callbacks: nothing of it is written.
        waiting_.push_back([durable = std::move(durable), refused = OversizeRecord(payload.size())](
                               absl::Status) mutable { durable(refused); });
      } else {
        EncodeRecord(type, payload, &buffer_);
        waiting_.push_back(std::move(durable));
      }
      cv_.SignalAll();
      return;
    }
  }
  durable(absl::FailedPreconditionError("append after the log was closed"));
}

void LogWriter::AppendUnwaited(uint8_t type, absl::string_view payload) {
  MutexLock lock(&mu_);
  if (closing_ || !failed_.ok()) return;
  if (payload.size() > kMaxRecordBytes) {  // its loss is harmless by contract, as in a crash
    FARM_LOG(kError, "log: an unwaited record dropped: %s", OversizeRecord(payload.size()).message());
    return;
  }
  if (policy_.kind == SyncPolicy::Kind::kAlways) {
    // Into the group buffer without waking the flusher: it goes with the next group
    // write, so it costs no write and no sync of its own.
    EncodeRecord(type, payload, &buffer_);
  } else {
    EncodeRecord(type, payload, &unwaited_);
    dirty_ = true;  // interval: the syncer writes it at the latest
  }
  ++stats_.records;
}

absl::Status LogWriter::WriteWithUnwaited(std::string bytes) {
  std::string all;
  {
    MutexLock lock(&mu_);
    all.swap(unwaited_);
  }
  if (all.empty()) {
    all = std::move(bytes);
  } else {
    all += bytes;
  }
  return all.empty() ? absl::OkStatus() : WriteBatch(all);
}

absl::Status LogWriter::Rotate(std::string next_path) {
  std::vector<Durable> batch;
  absl::Status batch_status;  // what the records queued before the rotation get
  absl::Status result;
  {
    MutexLock file_lock(&file_mu_);
    if (policy_.kind == SyncPolicy::Kind::kAlways) {
      bool closing = false;
      result = batch_status = WriteQueued(&batch, &closing);
    }
    if (result.ok() && policy_.kind != SyncPolicy::Kind::kAlways) {
      // Under always every batch was synced as written.
      result = WriteWithUnwaited("");
      if (absl::Status synced = result.ok() ? file_->Sync() : absl::OkStatus(); !synced.ok()) {
        result = FailSync(synced);
      }
    }
    if (result.ok()) {
      // The next segment must be new: opening it for the header would empty one that
      // holds records.
      absl::StatusOr<std::string> existing = fs_->ReadFile(next_path);
      absl::StatusOr<std::unique_ptr<WritableFile>> next =
          existing.ok() ? absl::AlreadyExistsError(absl::StrCat(next_path, " exists already"))
          : absl::IsNotFound(existing.status()) ? OpenWithHeader(fs_, next_path, identity_, 0)
                                                : existing.status();
      if (absl::Status dir = next.ok() ? fs_->SyncDir(Dirname(next_path)) : next.status(); !dir.ok()) {
        result = absl::Status(dir.code(), absl::StrCat("rotating the log to ", next_path, ": ", dir.message()));
        // The current file stays in use; a new segment left behind (empty, or a header
        // only) would follow it at the next start and make a torn tail of the current
        // file look like a closed segment cut short.
        if (!existing.ok() && absl::IsNotFound(existing.status())) {
          next = absl::StatusOr<std::unique_ptr<WritableFile>>(absl::CancelledError("dropped"));
          if (absl::Status removed = fs_->Remove(next_path); !removed.ok() && !absl::IsNotFound(removed)) {
            FARM_LOG(kError, "log: a failed rotation left %s behind (remove it before the next start): %s",
                     next_path, removed.ToString());
          } else {
            (void)fs_->SyncDir(Dirname(next_path));
          }
        }
      } else {
        file_ = std::move(*next);
        path_ = std::move(next_path);
        MutexLock lock(&mu_);
        stats_.segment_bytes = file_->size();
        dirty_ = false;
      }
    }
  }
  for (Durable& d : batch) d(batch_status);
  return result;
}

void LogWriter::Close() {
  {
    MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    cv_.SignalAll();
  }
  if (flusher_.joinable()) flusher_.join();
  if (policy_.kind == SyncPolicy::Kind::kNone) {
    MutexLock file_lock(&file_mu_);
    (void)WriteWithUnwaited("");
  }
}

absl::Status LogWriter::status() const {
  MutexLock lock(&mu_);
  return failed_;
}

LogWriterStats LogWriter::stats() const {
  MutexLock lock(&mu_);
  return stats_;
}

void LogWriter::AppendDirect(uint8_t type, absl::string_view payload, Durable durable) {
  absl::Status result;
  {
    MutexLock lock(&mu_);
    if (closing_) result = absl::FailedPreconditionError("append after the log was closed");
    else result = failed_;
  }
  if (result.ok() && payload.size() > kMaxRecordBytes) result = OversizeRecord(payload.size());
  if (result.ok()) {
    std::string bytes;
    EncodeRecord(type, payload, &bytes);
    MutexLock file_lock(&file_mu_);
    result = WriteWithUnwaited(std::move(bytes));
    MutexLock lock(&mu_);
    ++stats_.records;
    dirty_ |= result.ok();
  }
  durable(result);
}

void LogWriter::OnFailure(absl::AnyInvocable<void(const absl::Status&)> listener) {
  MutexLock lock(&mu_);
  on_failure_ = std::move(listener);
  if (!failed_.ok() && on_failure_) on_failure_(failed_);
}

void LogWriter::FailLocked(absl::Status error) {
  if (!failed_.ok()) return;
  failed_ = std::move(error);
  if (on_failure_) on_failure_(failed_);
}

absl::Status LogWriter::FailSync(const absl::Status& synced) {
  MutexLock lock(&mu_);
  FailLocked(absl::Status(synced.code(),
                          absl::StrCat(path_, ": sync failed, the log is no longer trusted: ", synced.message())));
  return failed_;
}

void LogWriter::SyncLoop() {
  for (;;) {
    bool closing = false;
    {
      MutexLock lock(&mu_);
      cv_.WaitFor(&mu_, policy_.interval, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_; });
      closing = closing_;
      if (!dirty_ && !closing) continue;
      dirty_ = false;
    }
    {
      MutexLock file_lock(&file_mu_);
      // A failed write loses only unwaited records (harmless by their contract).
      (void)WriteWithUnwaited("");
      if (absl::Status synced = file_->Sync(); !synced.ok()) {
        (void)FailSync(synced);
      } else {
        MutexLock lock(&mu_);
        ++stats_.syncs;
      }
    }
    if (closing) return;
  }
}

absl::Status LogWriter::WriteBatch(const std::string& bytes) {
  const uint64_t before = file_->size();
  absl::Status written = file_->Append(bytes);
  if (!written.ok()) {
    // Undo a partial write, so that the file stays whole records; if even that fails,
    // the log cannot be trusted any more.
    if (file_->size() != before) {
      absl::Status cut = fs_->Truncate(path_, before);
      absl::StatusOr<std::unique_ptr<WritableFile>> reopened =
          cut.ok() ? fs_->OpenForAppend(path_) : absl::StatusOr<std::unique_ptr<WritableFile>>(cut);
      if (!reopened.ok()) {
        MutexLock lock(&mu_);
        FailLocked(absl::DataLossError(
            absl::StrCat(path_, ": a failed write could not be undone: ", reopened.status().message())));
        return failed_;
      }
      file_ = std::move(*reopened);
    }
    return written;
  }
  if (policy_.kind == SyncPolicy::Kind::kAlways) {
    if (absl::Status synced = file_->Sync(); !synced.ok()) {
      {
        MutexLock lock(&mu_);
        ++stats_.writes;
      }
      return AsMaybeDurable(FailSync(synced));  // later records: refused (failed_)
    }
  }
  MutexLock lock(&mu_);
  ++stats_.writes;
  stats_.bytes += bytes.size();
  stats_.segment_bytes = file_->size();
  if (policy_.kind == SyncPolicy::Kind::kAlways) ++stats_.syncs;
  return absl::OkStatus();
}

absl::Status LogWriter::WriteQueued(std::vector<Durable>* batch, bool* closing) {
  std::string bytes;
  absl::Status failed;
  {
    MutexLock lock(&mu_);
    bytes.swap(buffer_);
    batch->swap(waiting_);
    *closing = closing_;
    failed = failed_;
    stats_.records += batch->size();
  }
  if (!failed.ok() || bytes.empty()) return failed;
  return WriteBatch(bytes);
}

void LogWriter::FlushLoop() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      cv_.Wait(&mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return !waiting_.empty() || closing_; });
    }
    std::vector<Durable> batch;
    bool closing = false;
    absl::Status result;
    {
      MutexLock file_lock(&file_mu_);
      result = WriteQueued(&batch, &closing);
    }
    for (Durable& d : batch) d(result);
    if (closing) {
      MutexLock lock(&mu_);
      if (waiting_.empty()) return;
    }
  }
}

}  // namespace farm::storage
