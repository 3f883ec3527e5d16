// ThreadLog: one worker thread's way to the node's durable log (storage::RecordLog).
// Append queues a record; `done` runs on this thread's loop once the record is durable
// (or with the error that kept it from being so) — never inside Append when there is a
// log. Completions that arrive after Stop are dropped: what they would answer is gone.
//
// Without a log (a node with --log_sync=off, a unit test) nothing is written and `done`
// runs at once, inside Append, with OK: callers must allow both.
//
// Threads: Append and Stop on the loop's thread; the log's flusher only posts to it, so
// the loop must outlive the log's last completion (the node closes its log first).
#ifndef FARM_ALLOC_THREAD_LOG_H_
#define FARM_ALLOC_THREAD_LOG_H_

#include <cstdint>
#include <memory>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/event/event_loop.h"
#include "farm/storage/node_log_types.h"
#include "farm/storage/record_log.h"

namespace farm::alloc {

class ThreadLog {
 public:
  using Done = absl::AnyInvocable<void(const absl::Status&)>;

  ThreadLog(storage::RecordLog* log, EventLoop* loop)
      : log_(log), loop_(loop), alive_(std::make_shared<bool>(true)) {}
  ~ThreadLog() { Stop(); }
  ThreadLog(const ThreadLog&) = delete;
  ThreadLog& operator=(const ThreadLog&) = delete;

  bool durable() const { return log_ != nullptr; }

  void Append(storage::NodeLogType type, absl::string_view payload, Done done) {
    if (log_ == nullptr) return done(absl::OkStatus());
    log_->Append(storage::TypeByte(type), payload,
                 [loop = loop_, alive = alive_, done = std::move(done)](absl::Status s) mutable {
                   loop->Post([alive = std::move(alive), done = std::move(done), s = std::move(s)]() mutable {
                     if (*alive) done(s);
                   });
                 });
  }
  // A record nobody waits for, harmless to lose (RecordLog::AppendUnwaited).
  void AppendUnwaited(storage::NodeLogType type, absl::string_view payload) {
    if (log_ != nullptr) log_->AppendUnwaited(storage::TypeByte(type), payload);
  }
  // Later completions are dropped. On the loop's thread.
  void Stop() { *alive_ = false; }

 private:
  storage::RecordLog* const log_;
  EventLoop* const loop_;
  std::shared_ptr<bool> alive_;  // read and written on the loop's thread only
};

}  // namespace farm::alloc

#endif  // FARM_ALLOC_THREAD_LOG_H_
