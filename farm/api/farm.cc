#include "farm/api/farm.h"

#include <cstdlib>
#include <utility>

#include "farm/base/log.h"
#include "farm/base/object_layout.h"
#include "membership/placement.h"
#include "tx/transaction.h"

namespace farm {
namespace api_internal {

// The node side of a Context: every transactional Context is a node worker thread's
// tx::ThreadContext (farm/event/context.h). Using a bare loop's context for a
// transaction, a lock-free read, a one-sided op or a message is a programming error: it
// stops here with a clear line, not later with corrupted memory.
tx::ThreadContext& NodeThread(Context& ctx) {
  if (!ctx.transactional()) {
    FARM_LOG(kError, "farm API: a transaction, read or message on a thread that is no node's "
                     "worker (a LoopContext)");
    std::abort();
  }
  return static_cast<tx::ThreadContext&>(ctx);
}

}  // namespace api_internal

namespace {
using api_internal::NodeThread;
}  // namespace

TxHandle txCreate(Context& ctx) { return tx::Transaction::Create(&NodeThread(ctx)); }

void txAlloc(Tx& tx, uint32_t size, Addr hint, Cont<absl::StatusOr<ObjBuf*>> cont) {
  tx.Alloc(size, hint, std::move(cont));
}

absl::Status txFree(Tx& tx, FatPtr object) { return tx.Free(object); }

void txRead(Tx& tx, FatPtr object, Cont<absl::StatusOr<ObjBuf*>> cont) {
  tx.Read(object, std::move(cont));
}

absl::Status txWrite(Tx& tx, ObjBuf* object) { return tx.Write(object); }

void txCommit(Tx& tx, Cont<absl::Status> cont) {
  tx.Commit([cont = std::move(cont)](const absl::Status& s) mutable { cont(s); });
}

void txAbort(Tx& tx) { tx.Abort(); }

uint64_t txWriteBytes(const Tx& tx) { return tx.WriteBytes(); }

LockFreeOp::LockFreeOp(Context& ctx) : ctx_(&ctx) { NodeThread(ctx).allocator().epoch().Enter(); }

LockFreeOp::LockFreeOp(LockFreeOp&& other) noexcept
    : ctx_(other.ctx_), active_(std::exchange(other.active_, false)) {}

LockFreeOp::~LockFreeOp() { End(); }

void LockFreeOp::End() {
  if (!active_) return;
  active_ = false;
  static_cast<tx::ThreadContext*>(ctx_)->allocator().epoch().Exit();
}

LockFreeOp lockFreeStart(Context& ctx) { return LockFreeOp(ctx); }

LockFreeStats lockFreeStats(Context& ctx) {
  const tx::ObjectReaderStats& s = NodeThread(ctx).reader().stats();
  return LockFreeStats{s.reads, s.local, s.retries_locked + s.retries_inconsistent + s.retries_slow};
}

CommitStats commitStats(Context& ctx) {
  const tx::TxStats& s = NodeThread(ctx).stats();
  return CommitStats{s.committed, s.aborted, s.served_single_machine, s.exclusive_single_machine};
}

void lockFreeRead(LockFreeOp& op, FatPtr object, Cont<absl::StatusOr<LockFreeObject>> cont) {
  if (!op.active()) {
    op.ctx().Defer([cont = std::move(cont)]() mutable {
      cont(absl::FailedPreconditionError("lockFreeRead after lockFreeEnd"));
    });
    return;
  }
  auto* ctx = static_cast<tx::ThreadContext*>(&op.ctx());  // checked by LockFreeOp
  ++ctx->stats().lock_free_reads;
  ctx->reader().Read(object, std::move(cont));
}

void lockFreeReadMany(LockFreeOp& op, std::span<const FatPtr> objects,
                      Cont<absl::StatusOr<std::span<const LockFreeObject>>> cont) {
  if (!op.active()) {
    op.ctx().Defer([cont = std::move(cont)]() mutable {
      cont(absl::FailedPreconditionError("lockFreeReadMany after lockFreeEnd"));
    });
    return;
  }
  auto* ctx = static_cast<tx::ThreadContext*>(&op.ctx());  // checked by LockFreeOp
  ++ctx->stats().lock_free_reads;
  ctx->reader().ReadMany(objects, std::move(cont));
}

void lockFreeEnd(LockFreeOp& op) { op.End(); }

uint32_t objGetIncarnation(const ObjBuf& object) { return object.incarnation(); }

FatPtr objCommittedPtr(const ObjBuf& object) { return object.committed_ptr(); }

uint64_t objStoredBytes(uint64_t payload) { return MaxStoredBytes(payload); }

absl::Status objIncrementIncarnation(Tx& tx, ObjBuf* object) { return tx.IncrementIncarnation(object); }

namespace {

void SendTo(Context& ctx, NodeId machine, MsgId id, const PayloadBuilder& payload,
            Cont<absl::StatusOr<std::string>> cont) {
  // A node cut off from the cluster ships nothing: what it would ship could run much
  // later, when the partition heals, long after the caller gave up on it.
  if (absl::Status serving = NodeThread(ctx).CheckServing(); !serving.ok()) {
    ctx.Defer([serving, cont = std::move(cont)]() mutable { cont(serving); });
    return;
  }
  auto shared = std::make_shared<Cont<absl::StatusOr<std::string>>>(std::move(cont));
  absl::Status sent = NodeThread(ctx).msg().Call(machine, id, payload,
                                     [shared](const absl::Status& s, absl::string_view reply) {
                                       if (!s.ok()) return (*shared)(s);
                                       (*shared)(std::string(reply));
                                     });
  if (!sent.ok()) {
    ctx.Defer([sent, shared] { (*shared)(sent); });
  }
}

// The primary of `address`'s region, or the error to continue with.
absl::StatusOr<NodeId> PrimaryOf(Context& ctx, Addr address) {
  std::shared_ptr<const membership::Placement> placement = NodeThread(ctx).placement();
  if (placement == nullptr) return absl::UnavailableError("no configuration yet");
  absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(address.region());
  if (!rs.ok()) return rs.status();
  return rs->primary();
}

}  // namespace

void msgSendTo(Context& ctx, NodeId machine, MsgId id, absl::string_view payload,
               Cont<absl::StatusOr<std::string>> cont) {
  const CopyOf copy{payload};
  SendTo(ctx, machine, id, PayloadBuilder{payload.size(), copy}, std::move(cont));
}

void msgSend(Context& ctx, Addr address, MsgId id, absl::string_view payload,
             Cont<absl::StatusOr<std::string>> cont) {
  const CopyOf copy{payload};
  msgSend(ctx, address, id, payload.size(), copy, std::move(cont));
}

void msgSend(Context& ctx, Addr address, MsgId id, size_t payload_bytes,
             absl::FunctionRef<void(char* dst)> write, Cont<absl::StatusOr<std::string>> cont) {
  absl::StatusOr<NodeId> primary = PrimaryOf(ctx, address);
  if (!primary.ok()) {
    ctx.Defer([s = primary.status(), cont = std::move(cont)]() mutable { cont(s); });
    return;
  }
  SendTo(ctx, *primary, id, PayloadBuilder{payload_bytes, write}, std::move(cont));
}

std::vector<NodeId> clusterMembers(Context& ctx) { return ctx.members(); }

absl::Status msgReply(Context& ctx, const Message& message, absl::string_view payload) {
  return NodeThread(ctx).msg().Reply(message.reply_to, payload);
}

absl::Status msgReplyError(Context& ctx, const Message& message, const absl::Status& error) {
  return NodeThread(ctx).msg().ReplyError(message.reply_to, error);
}

}  // namespace farm
