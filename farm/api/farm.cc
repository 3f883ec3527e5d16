#include "farm/api/farm.h"

#include <algorithm>
#include <array>
#include <utility>

namespace farm {

TxHandle txCreate(Context& ctx) { return tx::Transaction::Create(&ctx); }

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

LockFreeOp::LockFreeOp(Context& ctx) : ctx_(&ctx) { ctx_->allocator().epoch().Enter(); }

LockFreeOp::LockFreeOp(LockFreeOp&& other) noexcept
    : ctx_(other.ctx_), active_(std::exchange(other.active_, false)) {}

LockFreeOp::~LockFreeOp() { End(); }

void LockFreeOp::End() {
  if (!active_) return;
  active_ = false;
  ctx_->allocator().epoch().Exit();
}

LockFreeOp lockFreeStart(Context& ctx) { return LockFreeOp(ctx); }

void lockFreeRead(LockFreeOp& op, FatPtr object, Cont<absl::StatusOr<LockFreeObject>> cont) {
  if (!op.active()) {
    op.ctx().loop().Defer([cont = std::move(cont)]() mutable {
      cont(absl::FailedPreconditionError("lockFreeRead after lockFreeEnd"));
    });
    return;
  }
  Context* ctx = &op.ctx();
  ++ctx->stats().lock_free_reads;
  ctx->reader().Read(object, std::move(cont));
}

void lockFreeReadMany(LockFreeOp& op, std::span<const FatPtr> objects,
                      Cont<absl::StatusOr<std::span<const LockFreeObject>>> cont) {
  if (!op.active()) {
    op.ctx().loop().Defer([cont = std::move(cont)]() mutable {
      cont(absl::FailedPreconditionError("lockFreeReadMany after lockFreeEnd"));
    });
    return;
  }
  Context* ctx = &op.ctx();
  ++ctx->stats().lock_free_reads;
  ctx->reader().ReadMany(objects, std::move(cont));
}

void lockFreeEnd(LockFreeOp& op) { op.End(); }

uint32_t objGetIncarnation(const ObjBuf& object) { return object.incarnation(); }

absl::Status objIncrementIncarnation(Tx& tx, ObjBuf* object) { return tx.IncrementIncarnation(object); }

absl::Status msgRegisterHandler(node::Node& node, MsgId id, AppHandler handler,
                                absl::string_view service) {
  auto on_message = [&node, handler = std::move(handler)](MsgThread& thread, const Message& m) {
    handler(node.context(thread.index()), m);
  };
  return node.RegisterHandler(id, std::move(on_message), service);
}

void msgSendTo(Context& ctx, NodeId machine, MsgId id, absl::string_view payload,
               Cont<absl::StatusOr<std::string>> cont) {
  auto shared = std::make_shared<Cont<absl::StatusOr<std::string>>>(std::move(cont));
  absl::Status sent = ctx.msg().Call(machine, id, payload,
                                     [shared](const absl::Status& s, absl::string_view reply) {
                                       if (!s.ok()) return (*shared)(s);
                                       (*shared)(std::string(reply));
                                     });
  if (!sent.ok()) {
    ctx.loop().Defer([sent, shared] { (*shared)(sent); });
  }
}

void msgSend(Context& ctx, Addr address, MsgId id, absl::string_view payload,
             Cont<absl::StatusOr<std::string>> cont) {
  std::shared_ptr<const membership::Placement> placement = ctx.placement();
  absl::StatusOr<membership::ReplicaSet> rs =
      placement == nullptr ? absl::UnavailableError("no configuration yet")
                           : placement->Lookup(address.region());
  if (!rs.ok()) {
    ctx.loop().Defer([s = rs.status(), cont = std::move(cont)]() mutable { cont(s); });
    return;
  }
  msgSendTo(ctx, rs->primary(), id, payload, std::move(cont));
}

std::vector<NodeId> clusterMembers(Context& ctx) {
  std::shared_ptr<const membership::Placement> placement = ctx.placement();
  if (placement == nullptr) return {};
  std::vector<NodeId> members = placement->members();
  std::sort(members.begin(), members.end());
  return members;
}

absl::Status msgReply(Context& ctx, const Message& message, absl::string_view payload) {
  return ctx.msg().Reply(message.reply_to, payload);
}

absl::Status msgReplyError(Context& ctx, const Message& message, const absl::Status& error) {
  return ctx.msg().ReplyError(message.reply_to, error);
}

}  // namespace farm
