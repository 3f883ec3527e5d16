// WriteCombiner: one worker thread's single-key writes, combined per key (flat combining
// in front of the Store). The first write of a key goes to the store at once; while it
// is there, later writes of that key from any connection of the thread queue behind
// it, and when it completes everything queued goes to the store as one step:
//   - Puts only: one Put of the last value. Every write of the step was asked before
//     that Put and is answered after it, so each is linearized at it, in queue order
//     (the earlier values overwritten at the same instant).
//   - Otherwise one StoreTxn runs the queue in order — a Put as a Put, an update as its
//     body (a read-modify-write with its own reply: HSET, SET NX ...) — and commits
//     once, as EXEC runs its queue. The key's value is read from the transaction once
//     and written back once (cached_key_ops.h). A body's command error (a RedisError
//     or DataLoss, decided before it writes anything) is that write's reply and the
//     others go on. On Aborted (from the commit, or from an operation before it) the
//     step runs again, up to max_txn_attempts attempts. With a Context a retry first
//     waits a random time, up to 20 µs · 2^attempt (at most 1.3 ms), so that steps of
//     one key on two threads that collided do not retry in lockstep.
//   - A step that fails when nothing was committed — its attempts used up, a refused
//     Put or commit, a store error inside the transaction — runs again write by write,
//     in order, so that each gets exactly its own outcome (a Put never gets Aborted; an
//     update gets its own max_txn_attempts). A Put or commit whose outcome is unknown
//     (Unavailable, DeadlineExceeded, Unknown, Internal, DataLoss: it may have been
//     applied) gives every write of the step that error, but a write that refused
//     itself keeps its own reply; no write is replayed, which could undo a later one.
// A step of one write is exactly that write: a Put, or the update in a transaction of
// its own. Writes of one key apply in the order submitted, whichever connection sent
// them; a session may therefore submit a write of a key while its earlier write of the
// key is still queued or at the store (resp_session.h, invariant 2).
//
// Threads: the worker thread that owns the store only; callbacks run there, never inside
// Put or Update. Lifetime: shared by the thread's sessions and by its steps in flight;
// the store must outlive it. A value view must stay valid until its write's callback has
// run (the caller keeps the command's arguments).
#ifndef FARM_KV_RESP_WRITE_COMBINER_H_
#define FARM_KV_RESP_WRITE_COMBINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/resp/key_ops.h"
#include "kv/store.h"

namespace farm::kv::resp {

class WriteCombiner : public std::enable_shared_from_this<WriteCombiner> {
 public:
  // `ctx` (the store's thread; may be null: retries at once) times the retries'
  // backoff and must outlive the combiner's steps.
  static std::shared_ptr<WriteCombiner> Create(Store* store, int max_txn_attempts,
                                               Context* ctx = nullptr);
  WriteCombiner(const WriteCombiner&) = delete;
  WriteCombiner& operator=(const WriteCombiner&) = delete;

  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done);
  // `body` is a read-modify-write of `key` alone, run in a transaction: done gets its
  // reply or error (Aborted when the attempts ran out).
  void Update(absl::string_view key, CommandBody body, Done<CommandResult> done);

  struct Stats {
    uint64_t writes = 0;        // Put and Update calls
    uint64_t steps = 0;         // store steps (a step of one write included)
    uint64_t combined = 0;      // writes in steps of two or more
    uint64_t txn_attempts = 0;  // transactions begun for steps
    uint64_t one_by_one = 0;    // steps run again write by write
  };
  const Stats& stats() const { return stats_; }
  // Keys with a step at the store.
  size_t busy_keys() const { return keys_.size(); }

 private:
  struct Write {
    bool put = false;
    absl::string_view value;  // a Put's
    CommandBody body;         // an update's
    Done<absl::Status> put_done;
    Done<CommandResult> update_done;
  };
  struct Queue {
    bool busy = false;  // a step is at the store
    std::vector<Write> waiting;
  };
  struct Step;

  WriteCombiner(Store* store, int max_txn_attempts, Context* ctx)
      : store_(store), max_txn_attempts_(max_txn_attempts < 1 ? 1 : max_txn_attempts), ctx_(ctx) {}
  void Submit(absl::string_view key, Write write);
  void StartStep(const std::string& key, Queue& queue);
  void RunInTxn(std::shared_ptr<Step> step);
  void Retry(std::shared_ptr<Step> step);
  void Commit(std::shared_ptr<Step> step);
  // The attempt failed before committing: retried if Aborted, else Abandon.
  void Fail(std::shared_ptr<Step> step);
  void Abandon(std::shared_ptr<Step> step);
  void RunOneByOne(std::shared_ptr<Step> step);
  void Finish(std::shared_ptr<Step> step);

  Store* const store_;
  const int max_txn_attempts_;
  Context* const ctx_;
  uint64_t random_state_ = 0x9E3779B97F4A7C15ull;  // splitmix64, for the backoff
  // Keys with a step at the store; node-based: a Step keeps a view of its key.
  absl::node_hash_map<std::string, Queue> keys_;
  Stats stats_;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_WRITE_COMBINER_H_
