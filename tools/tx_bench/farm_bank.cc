#include "tools/tx_bench/farm_bank.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "farm/api/farm.h"
#include "farm/api/sync.h"
#include "tools/common/latency.h"

namespace farm::bench {
namespace {

constexpr uint32_t kAccountBytes = 16;

uint64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t BalanceOf(std::span<const char> data) {
  int64_t b;
  std::memcpy(&b, data.data(), sizeof(b));
  return b;
}

void SetBalance(std::span<char> data, int64_t b) { std::memcpy(data.data(), &b, sizeof(b)); }

// Runs `op(ctx, finish)` on thread `t` of `n` and waits for finish(status); an Aborted attempt (a
// conflict, or a configuration change such as a member joining) runs `op` again, as an application
// retries, until `timeout`. `op` must therefore start each attempt afresh.
absl::Status RunOn(Host& n, size_t t, absl::AnyInvocable<void(Context&, absl::AnyInvocable<void(absl::Status)>)> op,
                   absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  auto shared_op = std::make_shared<decltype(op)>(std::move(op));
  Context& ctx = n.context(t);
  for (absl::Duration backoff = absl::Milliseconds(1);; backoff = std::min(2 * backoff, absl::Milliseconds(100))) {
    auto result = std::make_shared<absl::Status>(absl::UnknownError("unset"));
    auto done = std::make_shared<Notification>();
    ctx.Post([&ctx, shared_op, result, done] {
      (*shared_op)(ctx, [result, done](absl::Status s) {
        *result = std::move(s);
        done->Notify();
      });
    });
    if (!done->WaitForNotificationWithTimeout(deadline - absl::Now())) {
      return absl::DeadlineExceededError(absl::StrCat("node ", n.self(), " thread ", t, " did not finish"));
    }
    if (result->code() != absl::StatusCode::kAborted || absl::Now() + backoff >= deadline) return *result;
    absl::SleepFor(backoff);
  }
}

// One worker thread's transfers (all on its loop).
class TransferLoop {
 public:
  TransferLoop(Context* ctx, std::vector<FatPtr> pool_a, std::vector<FatPtr> pool_b, uint64_t seed,
               uint64_t end_ns, absl::AnyInvocable<void(absl::Status)> finish)
      : ctx_(ctx), a_(std::move(pool_a)), b_(std::move(pool_b)), rng_(std::seed_seq{seed}),
        end_ns_(end_ns), finish_(std::move(finish)) {}

  void Start(uint32_t inflight) {
    running_ = inflight;
    for (uint32_t i = 0; i < inflight; ++i) Next();
  }

  uint64_t committed = 0, aborted = 0;
  std::vector<uint64_t> latencies;

 private:
  void Next() {
    if (NowNs() >= end_ns_ || !error_.ok()) {
      if (--running_ == 0) finish_(error_);
      return;
    }
    FatPtr from = a_[absl::Uniform<size_t>(rng_, 0, a_.size())];
    FatPtr to = b_[absl::Uniform<size_t>(rng_, 0, b_.size())];
    while (to == from) to = b_[absl::Uniform<size_t>(rng_, 0, b_.size())];
    Attempt(from, to, absl::Uniform<int64_t>(rng_, 1, 11), 0);
  }

  void Attempt(FatPtr from, FatPtr to, int64_t amount, int retries) {
    const uint64_t start = NowNs();
    TxHandle tx = txCreate(*ctx_);
    auto objects = std::make_shared<std::array<ObjBuf*, 2>>();
    auto left = std::make_shared<int>(2);
    auto failed = std::make_shared<absl::Status>();
    auto got = [=, this](int i, absl::StatusOr<ObjBuf*> o) {
      if (o.ok()) (*objects)[i] = *o;
      else failed->Update(o.status());
      if (--*left > 0) return;
      if (!failed->ok()) return Done(*failed, from, to, amount, start, retries);
      ObjBuf* f = (*objects)[0];
      ObjBuf* t = (*objects)[1];
      SetBalance(f->data(), BalanceOf(f->data()) - amount);
      SetBalance(t->data(), BalanceOf(t->data()) + amount);
      (void)txWrite(*tx, f);
      (void)txWrite(*tx, t);
      txCommit(*tx, [=, this](absl::Status s) { Done(s, from, to, amount, start, retries); });
    };
    txRead(*tx, from, [got](absl::StatusOr<ObjBuf*> o) mutable { got(0, std::move(o)); });
    txRead(*tx, to, [got](absl::StatusOr<ObjBuf*> o) mutable { got(1, std::move(o)); });
  }

  void Done(const absl::Status& s, FatPtr from, FatPtr to, int64_t amount, uint64_t start, int retries) {
    if (s.ok()) {
      ++committed;
      latencies.push_back(NowNs() - start);
      return Next();
    }
    if (s.code() == absl::StatusCode::kAborted) {
      ++aborted;
      if (NowNs() >= end_ns_) return Next();
      // Randomized backoff growing with the attempts, as a client would: an immediate
      // retry mostly meets the same lock again.
      const auto delay = absl::Microseconds(absl::Uniform<int>(rng_, 1, 8 << std::min(retries, 7)));
      ctx_->RunAfter(delay, [=, this] { Attempt(from, to, amount, retries + 1); });
      return;
    }
    error_.Update(s);
    Next();
  }

  Context* const ctx_;
  const std::vector<FatPtr> a_, b_;
  absl::BitGen rng_;
  const uint64_t end_ns_;
  absl::AnyInvocable<void(absl::Status)> finish_;
  uint32_t running_ = 0;
  absl::Status error_;
};

// One worker thread's lock-free readers (on its loop); `done` once all have stopped.
class ReadLoop {
 public:
  ReadLoop(Context* ctx, const std::vector<FatPtr>* objects, uint64_t seed, uint64_t end_ns)
      : ctx_(ctx), objects_(objects), rng_(std::seed_seq{seed}), end_ns_(end_ns) {}

  // On the context's thread.
  void Start(uint32_t inflight) {
    op_.emplace(lockFreeStart(*ctx_));
    running_ = inflight;
    for (uint32_t i = 0; i < inflight; ++i) Next();
  }

  uint64_t reads = 0;
  absl::Status status;
  Notification done;

 private:
  void Next() {
    if (NowNs() >= end_ns_ || !status.ok()) {
      if (--running_ > 0) return;
      op_.reset();
      done.Notify();  // the owner may destroy this now
      return;
    }
    lockFreeRead(*op_, (*objects_)[absl::Uniform<size_t>(rng_, 0, objects_->size())],
                 [this](absl::StatusOr<LockFreeObject> o) {
                   if (o.ok()) ++reads;
                   else status.Update(o.status());
                   Next();
                 });
  }

  Context* const ctx_;
  std::optional<LockFreeOp> op_;
  const std::vector<FatPtr>* const objects_;
  absl::BitGen rng_;
  const uint64_t end_ns_;
  uint32_t running_ = 0;
};

}  // namespace

absl::StatusOr<Accounts> CreateAccounts(const BankCluster& cluster, uint32_t per_node, int64_t balance) {
  Accounts accounts(cluster.storage.size());
  for (size_t n = 0; n < cluster.storage.size(); ++n) {
    std::vector<FatPtr>& mine = accounts[n];
    const Addr hint = cluster.storage[n].hint;
    // In batches of up to 100 per transaction (single-machine: all near the hint).
    for (uint32_t done = 0; done < per_node;) {
      const uint32_t batch = std::min<uint32_t>(100, per_node - done);
      absl::Status s = RunOn(
          *cluster.storage[n].creator, 0,
          [batch, balance, hint, &mine](Context& ctx, absl::AnyInvocable<void(absl::Status)> finish) {
            TxHandle tx = txCreate(ctx);
            auto made = std::make_shared<std::vector<FatPtr>>();
            auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
            auto answered = std::make_shared<uint32_t>(0);
            auto failed = std::make_shared<absl::Status>();
            for (uint32_t i = 0; i < batch; ++i) {
              txAlloc(*tx, kAccountBytes, hint, [=, &mine](absl::StatusOr<ObjBuf*> o) {
                if (o.ok()) {
                  SetBalance((*o)->data(), balance);
                  made->push_back((*o)->ptr());
                } else {
                  failed->Update(o.status());
                }
                if (++*answered < batch) return;
                if (!failed->ok()) {
                  txAbort(*tx);
                  return (*shared_finish)(*failed);
                }
                txCommit(*tx, [tx, made, shared_finish, &mine](absl::Status s) {
                  if (s.ok()) mine.insert(mine.end(), made->begin(), made->end());
                  (*shared_finish)(s);
                });
              });
            }
          },
          absl::Seconds(30));
      if (!s.ok()) return s;
      done += batch;
    }
  }
  return accounts;
}

absl::StatusOr<int64_t> TotalBalance(const BankCluster& cluster, const Accounts& accounts) {
  std::vector<FatPtr> all;
  for (const auto& a : accounts) all.insert(all.end(), a.begin(), a.end());
  int64_t total = 0;
  absl::Status s = RunOn(
      *cluster.runners.at(0).host, 0,
      [&all, &total](Context& ctx, absl::AnyInvocable<void(absl::Status)> finish) {
        total = 0;
        TxHandle tx = txCreate(ctx);
        auto left = std::make_shared<size_t>(all.size());
        auto failed = std::make_shared<absl::Status>();
        auto shared_finish = std::make_shared<decltype(finish)>(std::move(finish));
        for (const FatPtr& p : all) {
          txRead(*tx, p, [=, &total](absl::StatusOr<ObjBuf*> o) {
            if (o.ok()) total += BalanceOf((*o)->data());
            else failed->Update(o.status());
            if (--*left > 0) return;
            if (!failed->ok()) return (*shared_finish)(*failed);
            txCommit(*tx, [tx, shared_finish](absl::Status s) { (*shared_finish)(s); });
          });
        }
      },
      absl::Seconds(30));
  if (!s.ok()) return s;
  return total;
}

absl::StatusOr<BankRunResult> RunFarmBank(const BankCluster& cluster, const Accounts& accounts,
                                          const FarmBankOptions& options) {
  BankRunResult result;
  absl::StatusOr<int64_t> before = TotalBalance(cluster, accounts);
  if (!before.ok()) return before.status();
  result.total_before = *before;

  const int nodes = static_cast<int>(accounts.size());
  const uint64_t start = NowNs();
  const uint64_t end = start + absl::ToInt64Nanoseconds(options.duration);
  struct Worker {
    std::unique_ptr<TransferLoop> loop;
    std::shared_ptr<absl::Status> status = std::make_shared<absl::Status>(absl::UnknownError("running"));
    std::shared_ptr<Notification> done = std::make_shared<Notification>();
  };
  std::vector<Worker> workers;
  for (size_t r = 0; r < cluster.runners.size(); ++r) {
    Host& host = *cluster.runners[r].host;
    for (size_t t = 0; t < host.thread_count(); ++t) {
      // A runner holding data uses its own storage; a compute-only one, storage t.
      const int own = cluster.runners[r].own;
      const int n = own >= 0 ? own : static_cast<int>(t % nodes);
      std::vector<FatPtr> a, b;
      if (options.placement == Placement::kSingleMachine || nodes < 2 || (own >= 0 && nodes < 3)) {
        a = b = accounts[n];
      } else if (own >= 0) {  // two nodes other than the coordinator's
        a = accounts[(n + 1) % nodes];
        b = accounts[(n + 2) % nodes];
      } else {  // any two nodes: the coordinator holds none
        a = accounts[n];
        b = accounts[(n + 1) % nodes];
      }
      Worker& w = workers.emplace_back();
      w.loop = std::make_unique<TransferLoop>(
          &host.context(t), std::move(a), std::move(b), options.seed * 1000 + r * 10 + t, end,
          [status = w.status, done = w.done](absl::Status s) {
            *status = s;
            done->Notify();
          });
      host.context(t).Post([l = w.loop.get(), inflight = options.inflight] { l->Start(inflight); });
    }
  }
  LatencySamples latency;
  absl::Status first_error;
  for (Worker& w : workers) {
    if (!w.done->WaitForNotificationWithTimeout(options.duration + absl::Seconds(30))) {
      return absl::DeadlineExceededError("a worker did not stop");
    }
    first_error.Update(*w.status);
    result.committed += w.loop->committed;
    result.aborted += w.loop->aborted;
    for (uint64_t ns : w.loop->latencies) latency.Add(ns);
  }
  result.seconds = (NowNs() - start) / 1e9;
  if (!first_error.ok()) return first_error;
  result.mean_us = latency.MeanUs();
  result.p50_us = latency.PercentileUs(50);
  result.p99_us = latency.PercentileUs(99);
  absl::StatusOr<int64_t> after = TotalBalance(cluster, accounts);
  if (!after.ok()) return after.status();
  result.total_after = *after;
  if (result.total_after != result.total_before) {
    return absl::InternalError(absl::StrCat("the total balance changed from ", result.total_before,
                                            " to ", result.total_after));
  }
  return result;
}

absl::StatusOr<double> RunLockFreeReads(const BankCluster& cluster, const Accounts& accounts,
                                        uint32_t inflight, absl::Duration duration) {
  std::vector<FatPtr> all;
  for (const auto& a : accounts) all.insert(all.end(), a.begin(), a.end());
  const uint64_t start = NowNs();
  const uint64_t end = start + absl::ToInt64Nanoseconds(duration);
  std::vector<std::unique_ptr<ReadLoop>> readers;
  for (size_t n = 0; n < cluster.runners.size(); ++n) {
    Host& host = *cluster.runners[n].host;
    for (size_t t = 0; t < host.thread_count(); ++t) {
      readers.push_back(std::make_unique<ReadLoop>(&host.context(t), &all, n * 10 + t, end));
      host.context(t).Post([r = readers.back().get(), inflight] { r->Start(inflight); });
    }
  }
  uint64_t total = 0;
  for (auto& r : readers) {
    if (!r->done.WaitForNotificationWithTimeout(duration + absl::Seconds(30))) {
      return absl::DeadlineExceededError("a reader did not stop");
    }
    if (!r->status.ok()) return r->status;
    total += r->reads;
  }
  return total / ((NowNs() - start) / 1e9);
}

}  // namespace farm::bench
