// Coroutines over the public API (farm/api/coro.h) on an in-process 3-node cluster:
// a bank transfer written as a coroutine and retried when it aborts, Tasks awaited
// from Tasks (lazy start, values, deep nesting), many concurrent transfers on one
// thread keeping the total, lock-free reads (one object, and neighbours with one READ),
// and msgSend / msgSendTo from a coroutine to a handler that itself runs a coroutine
// (function shipping).
#include "farm/api/coro.h"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/api/farm.h"
#include "gtest/gtest.h"
#include "tests/support/node_cluster.h"

namespace farm {
namespace {

using testing::NodeCluster;
using testing::RunInContext;

// An account is a 16-byte object: the balance, then padding.
constexpr uint32_t kAccountBytes = 16;
constexpr MsgId kDepositMsgId = node::kFirstApplicationMsgId + 1;
constexpr MsgId kNobodyMsgId = node::kFirstApplicationMsgId + 2;

int64_t BalanceOf(std::span<const char> data) {
  int64_t b;
  std::memcpy(&b, data.data(), sizeof(b));
  return b;
}
int64_t BalanceOf(const ObjBuf* o) { return BalanceOf(o->data()); }
void SetBalance(ObjBuf* o, int64_t b) { std::memcpy(o->data().data(), &b, sizeof(b)); }

// A new account on this machine holding `balance`.
Task<absl::StatusOr<FatPtr>> CreateAccount(Context& ctx, int64_t balance) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> o = co_await TxAlloc(*tx, kAccountBytes, Addr());
  if (!o.ok()) co_return o.status();
  SetBalance(*o, balance);
  const FatPtr account = (*o)->ptr();
  absl::Status s = co_await TxCommit(*tx);
  if (!s.ok()) co_return s;
  co_return account;
}

// Moves `amount` from `from` to `to` in one transaction, retried while it aborts;
// FailedPrecondition when `from` holds too little. `attempts` (if given) counts the
// transactions; `interfere` (if given) is awaited between the reads and the commit of
// the first attempt.
Task<absl::Status> Transfer(Context& ctx, FatPtr from, FatPtr to, int64_t amount,
                            int* attempts = nullptr, Task<absl::Status>* interfere = nullptr) {
  for (int attempt = 1;; ++attempt) {
    if (attempts != nullptr) *attempts = attempt;
    TxHandle tx = txCreate(ctx);
    absl::StatusOr<ObjBuf*> a = co_await TxRead(*tx, from);
    if (!a.ok()) co_return a.status();
    absl::StatusOr<ObjBuf*> b = co_await TxRead(*tx, to);
    if (!b.ok()) co_return b.status();
    if (BalanceOf(*a) < amount) co_return absl::FailedPreconditionError("insufficient funds");
    SetBalance(*a, BalanceOf(*a) - amount);
    SetBalance(*b, BalanceOf(*b) + amount);
    if (absl::Status s = txWrite(*tx, *a); !s.ok()) co_return s;
    if (absl::Status s = txWrite(*tx, *b); !s.ok()) co_return s;
    if (interfere != nullptr && attempt == 1) {
      absl::Status s = co_await std::move(*interfere);
      if (!s.ok()) co_return s;
    }
    absl::Status committed = co_await TxCommit(*tx);
    if (!absl::IsAborted(committed)) co_return committed;
  }
}

Task<absl::StatusOr<int64_t>> ReadBalance(Context& ctx, FatPtr account) {
  LockFreeOp op = lockFreeStart(ctx);
  absl::StatusOr<LockFreeCopy> copy = co_await LockFreeRead(op, account);
  lockFreeEnd(op);
  if (!copy.ok()) co_return copy.status();
  co_return BalanceOf(copy->data);
}

// --- Function shipping: a deposit run by the account's primary ---

struct DepositRequest {
  FatPtr account;
  int64_t amount;
};

std::string Encode(const DepositRequest& r) {
  return std::string(reinterpret_cast<const char*>(&r), sizeof(r));
}

// Adds `amount` to the account (a local transaction on its primary); the new balance.
Task<absl::StatusOr<int64_t>> Deposit(Context& ctx, FatPtr account, int64_t amount) {
  for (;;) {
    TxHandle tx = txCreate(ctx);
    absl::StatusOr<ObjBuf*> o = co_await TxRead(*tx, account);
    if (!o.ok()) co_return o.status();
    const int64_t balance = BalanceOf(*o) + amount;
    SetBalance(*o, balance);
    if (absl::Status s = txWrite(*tx, *o); !s.ok()) co_return s;
    absl::Status s = co_await TxCommit(*tx);
    if (s.ok()) co_return balance;
    if (!absl::IsAborted(s)) co_return s;
  }
}

// kDepositMsgId: runs Deposit and replies with the new balance (8 bytes).
void OnDeposit(Context& ctx, const Message& message) {
  DepositRequest r;
  if (message.payload.size() != sizeof(r)) {
    (void)msgReplyError(ctx, message, absl::InvalidArgumentError("bad deposit request"));
    return;
  }
  std::memcpy(&r, message.payload.data(), sizeof(r));
  Message reply_to = message;
  reply_to.payload = {};  // valid only during this call
  Spawn(Deposit(ctx, r.account, r.amount), [&ctx, reply_to](absl::StatusOr<int64_t> balance) {
    if (!balance.ok()) {
      (void)msgReplyError(ctx, reply_to, balance.status());
      return;
    }
    (void)msgReply(ctx, reply_to,
                   std::string(reinterpret_cast<const char*>(&*balance), sizeof(*balance)));
  });
}

// Sends a deposit to the account's primary from a coroutine; the balance it replied.
Task<absl::StatusOr<int64_t>> ShipDeposit(Context& ctx, FatPtr account, int64_t amount) {
  const std::string request = Encode(DepositRequest{account, amount});
  absl::StatusOr<std::string> reply = co_await MsgSend(ctx, account.addr, kDepositMsgId, request);
  if (!reply.ok()) co_return reply.status();
  if (reply->size() != sizeof(int64_t)) co_return absl::InternalError("bad deposit reply");
  co_return BalanceOf(*reply);
}

// Runs the Task that `make(ctx)` returns on `n`'s worker thread `t`; waits for its
// result (a Status or StatusOr).
template <typename T, typename Make>
T RunTask(node::Node& n, Make make, size_t t = 0) {
  return RunInContext<T>(
      n, [make](Context& ctx, auto finish) { Spawn(make(ctx), std::move(finish)); }, t);
}

class CoroTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NodeCluster>> c = NodeCluster::Start(
        "shm", 3, "coro", nullptr,
        [](node::Node& n) { return msgRegisterHandler(n, kDepositMsgId, OnDeposit); });
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }

  FatPtr NewAccount(NodeId on, int64_t balance) {
    absl::StatusOr<FatPtr> p = RunTask<absl::StatusOr<FatPtr>>(
        cluster_->node(on), [balance](Context& ctx) { return CreateAccount(ctx, balance); });
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : FatPtr{};
  }

  int64_t Balance(NodeId from, FatPtr account) {
    absl::StatusOr<int64_t> b = RunTask<absl::StatusOr<int64_t>>(
        cluster_->node(from), [account](Context& ctx) { return ReadBalance(ctx, account); });
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? *b : -1;
  }

  std::unique_ptr<NodeCluster> cluster_;
};

TEST_F(CoroTest, TransferMovesTheAmountAndRefusesOverdrafts) {
  const FatPtr a = NewAccount(2, 100);
  const FatPtr b = NewAccount(3, 100);
  ASSERT_FALSE(a.is_null() || b.is_null());
  EXPECT_TRUE(RunTask<absl::Status>(cluster_->node(1), [a, b](Context& ctx) {
                return Transfer(ctx, a, b, 30);
              }).ok());
  EXPECT_EQ(Balance(1, a), 70);
  EXPECT_EQ(Balance(2, b), 130);
  absl::Status overdraft = RunTask<absl::Status>(
      cluster_->node(1), [a, b](Context& ctx) { return Transfer(ctx, a, b, 71); });
  EXPECT_EQ(overdraft.code(), absl::StatusCode::kFailedPrecondition) << overdraft;
  EXPECT_EQ(Balance(3, a), 70) << "the refused transfer wrote nothing";
  EXPECT_EQ(Balance(3, b), 130);
}

// Transfers 30 from a to b while, between its reads and its commit, 5 go from b to a.
Task<absl::Status> TransferWithInterference(Context& ctx, FatPtr a, FatPtr b,
                                            std::shared_ptr<int> attempts) {
  Task<absl::Status> interfere = Transfer(ctx, b, a, 5);
  co_return co_await Transfer(ctx, a, b, 30, attempts.get(), &interfere);
}

// The retry loop: an attempt whose reads were overwritten before its commit aborts,
// and the transfer's second attempt commits.
TEST_F(CoroTest, AnAbortedTransferIsRetried) {
  const FatPtr a = NewAccount(2, 100);
  const FatPtr b = NewAccount(3, 100);
  auto attempts = std::make_shared<int>(0);
  absl::Status s = RunTask<absl::Status>(cluster_->node(1), [a, b, attempts](Context& ctx) {
    return TransferWithInterference(ctx, a, b, attempts);
  });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(*attempts, 2);
  EXPECT_EQ(Balance(1, a), 100 - 30 + 5);
  EXPECT_EQ(Balance(1, b), 100 + 30 - 5);
}

Task<int> Add(int x, int y, bool* started) {
  *started = true;
  co_return x + y;
}

// Recursion through co_await: every level is a frame awaiting the next.
Task<int> SumTo(int n) {
  if (n == 0) co_return 0;
  const int rest = co_await SumTo(n - 1);
  co_return n + rest;
}

// An int that is only known after a real suspension (a transaction's read).
Task<int> BalanceInTx(Context& ctx, FatPtr account) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> o = co_await TxRead(*tx, account);
  if (!o.ok()) co_return -1;
  const int balance = static_cast<int>(BalanceOf(*o));
  if (!(co_await TxCommit(*tx)).ok()) co_return -2;
  co_return balance;
}

struct IntResults {
  bool started_before_await = true;
  int sum = 0;
  int deep = 0;
  int balance = 0;
};

Task<void> AwaitInts(Context& ctx, FatPtr account, IntResults* out) {
  bool started = false;
  Task<int> add = Add(2, 3, &started);
  out->started_before_await = started;  // lazy: nothing ran yet
  out->sum = co_await std::move(add);
  out->deep = co_await SumTo(1000);
  out->balance = co_await BalanceInTx(ctx, account);
}

TEST_F(CoroTest, TaskIntAwaitedFromTaskVoid) {
  const FatPtr a = NewAccount(3, 42);
  IntResults out;
  absl::Status s =
      RunInContext<absl::Status>(cluster_->node(1), [a, &out](Context& ctx, auto finish) {
        Spawn(AwaitInts(ctx, a, &out), [finish]() mutable { finish(absl::OkStatus()); });
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_FALSE(out.started_before_await);
  EXPECT_EQ(out.sum, 5);
  EXPECT_EQ(out.deep, 1000 * 1001 / 2);
  EXPECT_EQ(out.balance, 42);
}

// Many transfers in flight on one thread, all between the same two accounts on two
// other nodes: they conflict, abort and retry, and no money is made or lost.
struct Batch {
  int left = 0;
  int attempts = 0;
  absl::Status first_error;
  absl::AnyInvocable<void(absl::Status)> finish;
};

Task<void> TransferInBatch(Context& ctx, FatPtr from, FatPtr to, int64_t amount,
                           std::shared_ptr<Batch> batch) {
  int attempts = 0;
  absl::Status s = co_await Transfer(ctx, from, to, amount, &attempts);
  batch->attempts += attempts;
  batch->first_error.Update(s);
  if (--batch->left == 0) batch->finish(batch->first_error);
}

TEST_F(CoroTest, ConcurrentTransfersKeepTheTotal) {
  constexpr int kTransfers = 50;
  constexpr int64_t kInitial = 1000;
  const FatPtr a = NewAccount(2, kInitial);
  const FatPtr b = NewAccount(3, kInitial);
  int64_t expected_a = kInitial;
  for (int i = 0; i < kTransfers; ++i) expected_a += (i % 2 == 0 ? -1 : 1) * (i % 7 + 1);
  auto batch = std::make_shared<Batch>();
  absl::Status s =
      RunInContext<absl::Status>(cluster_->node(1), [a, b, batch](Context& ctx, auto finish) {
        batch->left = kTransfers;
        batch->finish = std::move(finish);
        for (int i = 0; i < kTransfers; ++i) {
          const bool a_to_b = i % 2 == 0;
          Spawn(TransferInBatch(ctx, a_to_b ? a : b, a_to_b ? b : a, i % 7 + 1, batch));
        }
      });
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_GE(batch->attempts, kTransfers);
  EXPECT_EQ(Balance(1, a), expected_a);
  EXPECT_EQ(Balance(1, b), 2 * kInitial - expected_a);
  RecordProperty("attempts", batch->attempts);
}

TEST_F(CoroTest, MsgSendShipsADepositToThePrimary) {
  const FatPtr a = NewAccount(2, 100);
  // From another node, then from the primary itself.
  absl::StatusOr<int64_t> b1 = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(1), [a](Context& ctx) { return ShipDeposit(ctx, a, 25); });
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_EQ(*b1, 125);
  absl::StatusOr<int64_t> b2 = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(2), [a](Context& ctx) { return ShipDeposit(ctx, a, 5); }, /*t=*/1);
  ASSERT_TRUE(b2.ok()) << b2.status();
  EXPECT_EQ(*b2, 130);
  EXPECT_EQ(Balance(3, a), 130);

  // The handler's error comes back as the reply: a stale pointer.
  FatPtr stale = a;
  ++stale.incarnation;
  absl::StatusOr<int64_t> refused = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(1), [stale](Context& ctx) { return ShipDeposit(ctx, stale, 1); });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
}

Task<absl::Status> SendTo(Context& ctx, Addr address, MsgId id) {
  absl::StatusOr<std::string> reply = co_await MsgSend(ctx, address, id, "x");
  co_return reply.status();
}

TEST_F(CoroTest, MsgSendErrors) {
  const FatPtr a = NewAccount(2, 1);
  absl::Status no_handler = RunTask<absl::Status>(
      cluster_->node(1), [a](Context& ctx) { return SendTo(ctx, a.addr, kNobodyMsgId); });
  EXPECT_EQ(no_handler.code(), absl::StatusCode::kUnimplemented) << no_handler;
  // Refused before sending (msgSend's own error path): the null address. (An address
  // in no region is not refused: placement maps every region id to a primary, which
  // then gets the message.)
  absl::Status null_address = RunTask<absl::Status>(
      cluster_->node(1), [](Context& ctx) { return SendTo(ctx, Addr(), kDepositMsgId); });
  EXPECT_EQ(null_address.code(), absl::StatusCode::kInvalidArgument) << null_address;
  absl::Status bad_request = RunTask<absl::Status>(
      cluster_->node(3), [a](Context& ctx) { return SendTo(ctx, a.addr, kDepositMsgId); });
  EXPECT_EQ(bad_request.code(), absl::StatusCode::kInvalidArgument) << bad_request;
}

Task<absl::StatusOr<int64_t>> ShipDepositTo(Context& ctx, NodeId machine, FatPtr account, int64_t amount) {
  const std::string request = Encode(DepositRequest{account, amount});
  absl::StatusOr<std::string> reply = co_await MsgSendTo(ctx, machine, kDepositMsgId, request);
  if (!reply.ok()) co_return reply.status();
  if (reply->size() != sizeof(int64_t)) co_return absl::InternalError("bad deposit reply");
  co_return BalanceOf(*reply);
}

TEST_F(CoroTest, MsgSendToAddressesAMachine) {
  const FatPtr a = NewAccount(3, 10);
  absl::StatusOr<int64_t> b = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(1), [a](Context& ctx) { return ShipDepositTo(ctx, 3, a, 7); });
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, 17);
  absl::StatusOr<int64_t> nobody = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(1), [a](Context& ctx) { return ShipDepositTo(ctx, 9, a, 7); });
  EXPECT_EQ(nobody.status().code(), absl::StatusCode::kUnavailable) << nobody.status();
  EXPECT_EQ(Balance(2, a), 17);
}

// Both balances with one READ; the accounts must lie in one region, ascending.
Task<absl::StatusOr<std::vector<int64_t>>> ReadBalances(Context& ctx, std::vector<FatPtr> accounts) {
  LockFreeOp op = lockFreeStart(ctx);
  absl::StatusOr<std::vector<LockFreeCopy>> copies = co_await LockFreeReadMany(op, accounts);
  lockFreeEnd(op);
  if (!copies.ok()) co_return copies.status();
  std::vector<int64_t> balances;
  for (const LockFreeCopy& c : *copies) balances.push_back(BalanceOf(c.data));
  co_return balances;
}

TEST_F(CoroTest, LockFreeReadManyReadsNeighboursTogether) {
  std::vector<FatPtr> accounts = {NewAccount(2, 11), NewAccount(2, 22)};
  ASSERT_EQ(accounts[0].addr.region(), accounts[1].addr.region()) << "one thread's slab";
  const bool swapped = accounts[1].addr.offset() < accounts[0].addr.offset();
  if (swapped) std::swap(accounts[0], accounts[1]);
  absl::StatusOr<std::vector<int64_t>> b = RunTask<absl::StatusOr<std::vector<int64_t>>>(
      cluster_->node(1), [accounts](Context& ctx) { return ReadBalances(ctx, accounts); });
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(*b, swapped ? (std::vector<int64_t>{22, 11}) : (std::vector<int64_t>{11, 22}));
  // Out of order: refused, as lockFreeReadMany refuses it.
  std::swap(accounts[0], accounts[1]);
  absl::StatusOr<std::vector<int64_t>> refused = RunTask<absl::StatusOr<std::vector<int64_t>>>(
      cluster_->node(1), [accounts](Context& ctx) { return ReadBalances(ctx, accounts); });
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
}

Task<absl::Status> OtherErrors(Context& ctx) {
  TxHandle tx = txCreate(ctx);
  absl::StatusOr<ObjBuf*> huge = co_await TxAlloc(*tx, 2u << 20);
  if (huge.status().code() != absl::StatusCode::kOutOfRange)
    co_return absl::InternalError(absl::StrCat("alloc: ", huge.status().ToString()));
  LockFreeOp op = lockFreeStart(ctx);
  lockFreeEnd(op);
  absl::StatusOr<LockFreeCopy> ended = co_await LockFreeRead(op, FatPtr{Addr(1, 64), 16, 0});
  if (ended.status().code() != absl::StatusCode::kFailedPrecondition)
    co_return absl::InternalError(absl::StrCat("read: ", ended.status().ToString()));
  absl::Status first = co_await TxCommit(*tx);
  if (!first.ok()) co_return first;
  absl::Status again = co_await TxCommit(*tx);
  if (again.code() != absl::StatusCode::kFailedPrecondition)
    co_return absl::InternalError(absl::StrCat("commit: ", again.ToString()));
  co_return absl::OkStatus();
}

TEST_F(CoroTest, ErrorsAreValues) {
  absl::Status s =
      RunTask<absl::Status>(cluster_->node(1), [](Context& ctx) { return OtherErrors(ctx); });
  EXPECT_TRUE(s.ok()) << s;
}

Task<absl::StatusOr<int64_t>> SleepAndMeasure(Context& ctx, absl::Duration d) {
  const absl::Time start = absl::Now();
  co_await SleepFor(ctx, d);
  co_return absl::ToInt64Milliseconds(absl::Now() - start);
}

TEST_F(CoroTest, SleepForResumesAfterTheDelay) {
  absl::StatusOr<int64_t> ms = RunTask<absl::StatusOr<int64_t>>(
      cluster_->node(2), [](Context& ctx) { return SleepAndMeasure(ctx, absl::Milliseconds(20)); });
  ASSERT_TRUE(ms.ok()) << ms.status();
  EXPECT_GE(*ms, 20);
}

}  // namespace
}  // namespace farm
