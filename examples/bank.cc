// bank: a complete small program on the public API (farm/api/farm.h, farm/api/coro.h,
// farm/api/in_process_cluster.h) — it includes nothing else of the project.
//
// Starts a 3-node cluster in this process (shm fabric, static membership), creates two
// accounts on different nodes, moves money between them with a transaction written
// with continuations and with one written as a coroutine, reads a balance lock-free,
// and ships a deposit to the machine that stores an account (msgRegisterHandler /
// msgSend). Prints what it does; exits 0 when every balance is as expected.
//
// Threads: main() only starts the cluster and waits; everything else runs on worker
// thread 0 of some node (RunOn), where that thread's Context is used.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/in_process_cluster.h"

namespace farm {
namespace {

// An account is a 16-byte object: the balance, then padding.
constexpr uint32_t kAccountBytes = 16;
constexpr MsgId kDepositMsgId = kApplicationMsgIds[0];

int64_t BalanceOf(std::span<const char> data) {
  int64_t b;
  std::memcpy(&b, data.data(), sizeof(b));
  return b;
}
void SetBalance(ObjBuf* account, int64_t b) { std::memcpy(account->data().data(), &b, sizeof(b)); }

// Runs `op(ctx, done)` on worker thread 0 of `n` and waits until it calls done(result).
template <typename T>
T RunOn(Host& n, absl::AnyInvocable<void(Context&, Cont<T>)> op) {
  auto promise = std::make_shared<std::promise<T>>();
  std::future<T> result = promise->get_future();
  Context& ctx = n.context(0);
  ctx.Post([&ctx, promise, op = std::move(op)]() mutable {
    op(ctx, [promise](T value) { promise->set_value(std::move(value)); });
  });
  return result.get();
}

// --- Continuations: each step names the next ---

// Moves `amount` from `from` to `to`; starts again when the commit aborts (a conflict).
void TransferWithContinuations(Context& ctx, FatPtr from, FatPtr to, int64_t amount,
                               Cont<absl::Status> done) {
  TxHandle tx = txCreate(ctx);
  txRead(*tx, from,
         [&ctx, tx, from, to, amount, done = std::move(done)](absl::StatusOr<ObjBuf*> a) mutable {
           if (!a.ok()) return done(a.status());
           txRead(*tx, to,
                  [&ctx, tx, from, to, amount, a = *a,
                   done = std::move(done)](absl::StatusOr<ObjBuf*> b) mutable {
                    if (!b.ok()) return done(b.status());
                    if (BalanceOf(a->data()) < amount)
                      return done(absl::FailedPreconditionError("no funds"));
                    SetBalance(a, BalanceOf(a->data()) - amount);
                    SetBalance(*b, BalanceOf((*b)->data()) + amount);
                    (void)txWrite(*tx, a);  // both objects were read by tx: cannot fail
                    (void)txWrite(*tx, *b);
                    txCommit(*tx, [&ctx, tx, from, to, amount,
                                   done = std::move(done)](absl::Status s) mutable {
                      if (absl::IsAborted(s))
                        return TransferWithContinuations(ctx, from, to, amount, std::move(done));
                      done(s);
                    });
                  });
         });
}

// A lock-free read: one fabric READ, no transaction. The bytes are valid only in the
// continuation, so take what is needed there.
void ReadBalanceLockFree(Context& ctx, FatPtr account, Cont<absl::StatusOr<int64_t>> done) {
  auto op = std::make_shared<LockFreeOp>(lockFreeStart(ctx));
  lockFreeRead(*op, account,
               [op, done = std::move(done)](absl::StatusOr<LockFreeObject> r) mutable {
                 lockFreeEnd(*op);
                 if (!r.ok()) return done(r.status());
                 done(BalanceOf(r->data));
               });
}

// --- Coroutines: the same steps, in order ---

Task<absl::StatusOr<FatPtr>> CreateAccount(Context& ctx, int64_t balance) {
  TxHandle tx = txCreate(ctx);
  // Addr() as the hint: on this machine.
  absl::StatusOr<ObjBuf*> account = co_await TxAlloc(*tx, kAccountBytes, Addr());
  if (!account.ok()) co_return account.status();
  SetBalance(*account, balance);
  absl::Status committed = co_await TxCommit(*tx);
  if (!committed.ok()) co_return committed;
  co_return (*account)->ptr();
}

Task<absl::Status> Transfer(Context& ctx, FatPtr from, FatPtr to, int64_t amount) {
  for (;;) {
    TxHandle tx = txCreate(ctx);
    absl::StatusOr<ObjBuf*> a = co_await TxRead(*tx, from);
    if (!a.ok()) co_return a.status();
    absl::StatusOr<ObjBuf*> b = co_await TxRead(*tx, to);
    if (!b.ok()) co_return b.status();
    if (BalanceOf((*a)->data()) < amount) co_return absl::FailedPreconditionError("no funds");
    SetBalance(*a, BalanceOf((*a)->data()) - amount);
    SetBalance(*b, BalanceOf((*b)->data()) + amount);
    (void)txWrite(*tx, *a);
    (void)txWrite(*tx, *b);
    absl::Status committed = co_await TxCommit(*tx);
    if (!absl::IsAborted(committed)) co_return committed;  // else: a conflict, again
  }
}

// --- Function shipping: a deposit runs on the machine that stores the account ---

struct DepositRequest {
  FatPtr account;
  int64_t amount;
};

// Adds `amount` to the account in a transaction (local to this machine); the new balance.
Task<absl::StatusOr<int64_t>> Deposit(Context& ctx, FatPtr account, int64_t amount) {
  for (;;) {
    TxHandle tx = txCreate(ctx);
    absl::StatusOr<ObjBuf*> o = co_await TxRead(*tx, account);
    if (!o.ok()) co_return o.status();
    const int64_t balance = BalanceOf((*o)->data()) + amount;
    SetBalance(*o, balance);
    (void)txWrite(*tx, *o);
    absl::Status committed = co_await TxCommit(*tx);
    if (committed.ok()) co_return balance;
    if (!absl::IsAborted(committed)) co_return committed;
  }
}

// The kDepositMsgId handler: runs Deposit, replies with the new balance when it ends.
void OnDeposit(Context& ctx, const Message& message) {
  DepositRequest r;
  if (message.payload.size() != sizeof(r)) {
    (void)msgReplyError(ctx, message, absl::InvalidArgumentError("bad deposit request"));
    return;
  }
  std::memcpy(&r, message.payload.data(), sizeof(r));
  Message request = message;
  request.payload = {};  // valid only during this call; the reply needs only reply_to
  Spawn(Deposit(ctx, r.account, r.amount), [&ctx, request](absl::StatusOr<int64_t> balance) {
    if (!balance.ok()) return (void)msgReplyError(ctx, request, balance.status());
    (void)msgReply(ctx, request,
                   std::string(reinterpret_cast<const char*>(&*balance), sizeof(int64_t)));
  });
}

// Sends the deposit to the account's primary; the balance it replied.
Task<absl::StatusOr<int64_t>> ShipDeposit(Context& ctx, FatPtr account, int64_t amount) {
  const DepositRequest r{account, amount};
  const std::string request(reinterpret_cast<const char*>(&r), sizeof(r));
  absl::StatusOr<std::string> reply = co_await MsgSend(ctx, account.addr, kDepositMsgId, request);
  if (!reply.ok()) co_return reply.status();
  if (reply->size() != sizeof(int64_t)) co_return absl::InternalError("bad deposit reply");
  co_return BalanceOf(*reply);
}

// Runs the Task that `make(ctx)` returns on thread 0 of `n`; waits for its result.
template <typename T, typename Make>
T RunTaskOn(Host& n, Make make) {
  return RunOn<T>(n, [make](Context& ctx, Cont<T> done) { Spawn(make(ctx), std::move(done)); });
}

int Main() {
  InProcessClusterOptions options;
  options.backend = "shm";
  options.nodes = 3;
  options.dir = std::filesystem::temp_directory_path() / absl::StrCat("farm-bank-", ::getpid());
  options.before_start = [](Host& host) { return msgRegisterHandler(host, kDepositMsgId, OnDeposit); };
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Start(options);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster: %s\n", cluster.status().ToString().c_str());
    return 1;
  }
  Host& n1 = (*cluster)->host(1);
  Host& n2 = (*cluster)->host(2);
  Host& n3 = (*cluster)->host(3);
  int failures = 0;
  auto report = [&failures](const char* what, const absl::StatusOr<int64_t>& got, int64_t want) {
    const bool ok = got.ok() && *got == want;
    if (!ok) ++failures;
    std::printf("%-46s %s%s\n", what,
                got.ok() ? absl::StrCat(*got).c_str() : got.status().ToString().c_str(),
                ok ? "" : absl::StrCat(" (expected ", want, ")").c_str());
  };
  auto report_status = [&failures](const char* what, const absl::Status& s) {
    if (!s.ok()) ++failures;
    std::printf("%-46s %s\n", what, s.ToString().c_str());
  };

  // Two accounts of 100, on nodes 2 and 3: transfers from node 1 commit in two phases.
  absl::StatusOr<FatPtr> alice =
      RunTaskOn<absl::StatusOr<FatPtr>>(n2, [](Context& ctx) { return CreateAccount(ctx, 100); });
  absl::StatusOr<FatPtr> bob =
      RunTaskOn<absl::StatusOr<FatPtr>>(n3, [](Context& ctx) { return CreateAccount(ctx, 100); });
  if (!alice.ok() || !bob.ok()) {
    std::fprintf(stderr, "accounts: %s %s\n", alice.status().ToString().c_str(),
                 bob.status().ToString().c_str());
    return 1;
  }
  std::printf("alice %s on node 2, bob %s on node 3, 100 each\n", alice->ToString().c_str(),
              bob->ToString().c_str());
  const FatPtr a = *alice, b = *bob;

  absl::Status s = RunOn<absl::Status>(n1, [a, b](Context& ctx, Cont<absl::Status> done) {
    TransferWithContinuations(ctx, a, b, 30, std::move(done));
  });
  report_status("continuations: alice -> bob 30", s);
  s = RunTaskOn<absl::Status>(n1, [a, b](Context& ctx) { return Transfer(ctx, b, a, 10); });
  report_status("coroutine:     bob -> alice 10", s);

  auto read = [](FatPtr account) {
    return [account](Context& ctx, Cont<absl::StatusOr<int64_t>> done) {
      ReadBalanceLockFree(ctx, account, std::move(done));
    };
  };
  absl::StatusOr<int64_t> balance = RunOn<absl::StatusOr<int64_t>>(n1, read(a));
  report("lock-free read of alice from node 1", balance, 80);
  balance = RunOn<absl::StatusOr<int64_t>>(n1, read(b));
  report("lock-free read of bob from node 1", balance, 120);

  balance =
      RunTaskOn<absl::StatusOr<int64_t>>(n3, [a](Context& ctx) { return ShipDeposit(ctx, a, 5); });
  report("msgSend: deposit 5 at alice's primary", balance, 85);

  std::printf("%s\n", failures == 0 ? "OK" : "FAILED");
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace farm

int main() { return farm::Main(); }
