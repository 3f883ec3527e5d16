#include "kv/resp/write_combiner.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "absl/time/time.h"

#include "kv/resp/async_steps.h"
#include "kv/resp/cached_key_ops.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

// Decided by the command before it writes anything: its reply, and the step goes on.
bool IsCommandError(const absl::Status& status) {
  return IsRedisError(status) || status.code() == absl::StatusCode::kDataLoss;
}

}  // namespace

struct WriteCombiner::Step {
  absl::string_view key;  // the key's entry in keys_, which lives while the step runs
  std::vector<Write> writes;
  std::vector<CommandResult> results;  // of the transaction's current attempt
  absl::Status failed;                 // a store error inside the current attempt
  int attempts_left = 0;
};

// Whether a failed Put or commit may still have been applied: the machine did not
// answer (or answered something unexpected), so the outcome is unknown. Any other
// error is a refusal: nothing was applied.
bool OutcomeUnknown(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s) || absl::IsUnknown(s) || absl::IsInternal(s) ||
         absl::IsDataLoss(s);
}

std::shared_ptr<WriteCombiner> WriteCombiner::Create(Store* store, int max_txn_attempts,
                                                     Context* ctx) {
  auto combiner = std::shared_ptr<WriteCombiner>(new WriteCombiner(store, max_txn_attempts, ctx));
  combiner->random_state_ ^= reinterpret_cast<uintptr_t>(combiner.get());  // threads differ
  return combiner;
}

void WriteCombiner::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  Write w;
  w.put = true;
  w.value = value;
  w.put_done = std::move(done);
  Submit(key, std::move(w));
}

void WriteCombiner::Update(absl::string_view key, CommandBody body, Done<CommandResult> done) {
  Write w;
  w.body = std::move(body);
  w.update_done = std::move(done);
  Submit(key, std::move(w));
}

void WriteCombiner::Submit(absl::string_view key, Write write) {
  ++stats_.writes;
  auto it = keys_.find(key);
  if (it == keys_.end()) it = keys_.try_emplace(std::string(key)).first;
  it->second.waiting.push_back(std::move(write));
  if (!it->second.busy) StartStep(it->first, it->second);
}

void WriteCombiner::StartStep(const std::string& key, Queue& queue) {
  auto step = std::make_shared<Step>();
  step->key = key;
  step->writes.swap(queue.waiting);
  queue.busy = true;
  ++stats_.steps;
  if (step->writes.size() > 1) stats_.combined += step->writes.size();
  bool puts_only = true;
  for (const Write& w : step->writes) puts_only = puts_only && w.put;
  if (!puts_only) {
    step->attempts_left = max_txn_attempts_;
    return RunInTxn(std::move(step));
  }
  store_->Put(step->key, step->writes.back().value,
              [self = shared_from_this(), step](absl::Status s) mutable {
                // Refused: nothing was applied, so each write gets its own outcome. An
                // unknown outcome is every write's (a replay could undo a later value).
                if (!s.ok() && !OutcomeUnknown(s) && step->writes.size() > 1) {
                  return self->RunOneByOne(std::move(step));
                }
                for (Write& w : step->writes) w.put_done(s);
                self->Finish(std::move(step));
              });
}

void WriteCombiner::RunInTxn(std::shared_ptr<Step> step) {
  --step->attempts_left;
  ++stats_.txn_attempts;
  step->failed = absl::OkStatus();
  step->results.assign(step->writes.size(), CommandResult(std::string()));
  auto ops = std::make_shared<CachedKeyOps>(
      std::string(step->key), std::make_shared<TxnOps>(std::shared_ptr<StoreTxn>(store_->BeginTxn())));
  RunSequentially(
      step->writes.size(),
      [step, ops](size_t i, absl::AnyInvocable<void()> next) {
        if (!step->failed.ok()) return next();
        Write& w = step->writes[i];
        if (w.put) {
          ops->Put(step->key, w.value, [step, next = std::move(next)](absl::Status s) mutable {
            if (!s.ok()) step->failed = s;
            next();
          });
          return;
        }
        w.body(ops, [step, i, next = std::move(next)](CommandResult r) mutable {
          if (!r.ok() && !IsCommandError(r.status())) {
            step->failed = r.status();
          } else {
            step->results[i] = std::move(r);
          }
          next();
        });
      },
      [self = shared_from_this(), step, ops]() mutable {
        if (!step->failed.ok()) return self->Fail(std::move(step));
        // Every write refused itself (a command error): nothing to commit, as a command's
        // own transaction is dropped after its error.
        bool all_refused = true;
        for (size_t i = 0; i < step->writes.size() && all_refused; ++i) {
          all_refused = !step->writes[i].put && !step->results[i].ok();
        }
        if (all_refused) {
          for (size_t i = 0; i < step->writes.size(); ++i) {
            step->writes[i].update_done(std::move(step->results[i]));
          }
          return self->Finish(std::move(step));
        }
        ops->WriteBack([self, step, ops](absl::Status s) mutable {
          if (!s.ok()) {
            step->failed = s;
            return self->Fail(std::move(step));
          }
          ops->Commit([self, step, ops](absl::Status s) mutable {
            if (absl::IsAborted(s) && step->attempts_left > 0) return self->Retry(std::move(step));
            if (!s.ok() && !OutcomeUnknown(s)) {
              // Nothing was committed (attempts used up, or refused): as when an
              // operation before the commit fails.
              step->failed = s;
              return self->Abandon(std::move(step));
            }
            // Committed, or an unknown outcome: that is every write's, except that a
            // write that refused itself wrote nothing and keeps its own reply.
            for (size_t i = 0; i < step->writes.size(); ++i) {
              Write& w = step->writes[i];
              if (w.put) {
                w.put_done(s);
              } else {
                const bool refused = !step->results[i].ok();
                w.update_done(s.ok() || refused ? std::move(step->results[i]) : CommandResult(s));
              }
            }
            self->Finish(std::move(step));
          });
        });
      });
}

void WriteCombiner::Retry(std::shared_ptr<Step> step) {
  if (ctx_ == nullptr) return RunInTxn(std::move(step));
  // splitmix64
  uint64_t z = (random_state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  const int done = max_txn_attempts_ - step->attempts_left;  // attempts so far, >= 1
  const uint64_t ceiling_us = uint64_t{20} << std::min(done, 6);
  ctx_->RunAfter(absl::Microseconds(static_cast<int64_t>(z % (ceiling_us + 1))),
                 [self = shared_from_this(), step = std::move(step)]() mutable {
                   self->RunInTxn(std::move(step));
                 });
}

void WriteCombiner::Fail(std::shared_ptr<Step> step) {
  // A conflict seen before the commit (a read found the key locked or changed) is an
  // abort like the commit's.
  if (absl::IsAborted(step->failed) && step->attempts_left > 0) return Retry(std::move(step));
  Abandon(std::move(step));
}

void WriteCombiner::Abandon(std::shared_ptr<Step> step) {
  // Nothing was committed (the transaction is dropped): each write on its own, unless
  // it was the only one.
  if (step->writes.size() > 1) return RunOneByOne(std::move(step));
  Write& w = step->writes[0];
  if (w.put) {
    w.put_done(step->failed);
  } else {
    w.update_done(step->failed);
  }
  Finish(std::move(step));
}

void WriteCombiner::RunOneByOne(std::shared_ptr<Step> step) {
  ++stats_.one_by_one;
  const int attempts = max_txn_attempts_;
  Store* store = store_;
  RunSequentially(
      step->writes.size(),
      [step, store, attempts](size_t i, absl::AnyInvocable<void()> next) {
        Write& w = step->writes[i];
        if (w.put) {
          store->Put(step->key, w.value,
                     [step, i, next = std::move(next)](absl::Status s) mutable {
                       step->writes[i].put_done(s);
                       next();
                     });
          return;
        }
        ::farm::kv::resp::RunInTxn(
            store, nullptr, attempts,
            [body = w.body](std::shared_ptr<TxnOps> ops, Done<CommandResult> d) {
              body(std::move(ops), std::move(d));
            },
            [step, i, next = std::move(next)](CommandResult r) mutable {
              step->writes[i].update_done(std::move(r));
              next();
            });
      },
      [self = shared_from_this(), step]() mutable { self->Finish(std::move(step)); });
}

void WriteCombiner::Finish(std::shared_ptr<Step> step) {
  auto it = keys_.find(step->key);
  Queue& queue = it->second;
  queue.busy = false;
  if (queue.waiting.empty()) {
    keys_.erase(it);
    return;
  }
  StartStep(it->first, queue);
}

}  // namespace farm::kv::resp
