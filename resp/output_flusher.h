// OutputFlusher: writes the replies of one worker thread's connections once per pass of
// its event loop instead of once per reply. Replies that complete one by one during a
// pass (the lookups of a pipeline answering in turn) leave in one send(); Redis does
// the same (its replies go out before the loop sleeps).
//
// A connection asks with Request when work that completed later (a session's
// on_progress) has output for it; the flusher calls its Flush() after the current
// callback returns, once per pass however often it was asked. A connection that closes
// with a request pending cancels it.
//
// Threads: the loop thread only. Lifetime: made with Create and shared with the pass it
// defers (a pass that runs after the worker is gone finds nothing to flush).
#ifndef FARM_RESP_OUTPUT_FLUSHER_H_
#define FARM_RESP_OUTPUT_FLUSHER_H_

#include <memory>
#include <vector>

#include "farm/api/farm.h"

namespace farm::resp {

class RespConnection;

class OutputFlusher : public std::enable_shared_from_this<OutputFlusher> {
 public:
  static std::shared_ptr<OutputFlusher> Create(Context* ctx);
  OutputFlusher(const OutputFlusher&) = delete;
  OutputFlusher& operator=(const OutputFlusher&) = delete;

  // `connection` must call Cancel before it is destroyed if its request may be pending.
  void Request(RespConnection* connection);
  void Cancel(RespConnection* connection);

 private:
  explicit OutputFlusher(Context* ctx) : ctx_(ctx) {}
  void Run();

  Context* const ctx_;
  bool scheduled_ = false;
  std::vector<RespConnection*> pending_;
  std::vector<RespConnection*> running_;  // the pass being run; cancelled entries nulled
};

}  // namespace farm::resp

#endif  // FARM_RESP_OUTPUT_FLUSHER_H_
