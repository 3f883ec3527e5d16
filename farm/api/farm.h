// The public API: the operations of the FaRM paper's Figure 6, with the same names.
//
//   txCreate, txAlloc, txFree, txRead, txWrite, txCommit   transactions (strictly
//                                                          serializable; tx/transaction.h)
//   lockFreeStart, lockFreeRead, lockFreeEnd               single-object reads with one
//                                                          fabric READ, no transaction
//   objGetIncarnation, objIncrementIncarnation             incarnations
//   msgRegisterHandler, msgSend (+ msgReply)               messages to the machine that
//                                                          stores an address (function
//                                                          shipping)
//
// Event-driven, as in the paper: operations that complete later take a continuation,
// which runs on the thread that started the operation (never inside the call). Every
// call takes the calling worker thread's Context (farm/event/context.h: this machine,
// the thread's index, work and timers on the thread, the configuration's members),
// from Host::context(i) or the one a handler is given: no global state. A service
// meets its node through a Host (farm/api/host.h). farm/api/coro.h puts C++20
// coroutines on top.
//
// Sealed: this header names the transaction layer's types only by declaration and
// includes no tx/, alloc/, membership/ or node/ header and no generated protobuf code.
//
// Objects are plain byte buffers to the application: versions, incarnations and line
// versions are added and removed by the layers below (farm/base/object_layout.h).
//
// Errors (absl::Status): Aborted — a conflict, retry the transaction; FailedPrecondition
// — the object was freed or reallocated (incarnation mismatch), or the transaction is
// over; NotFound — a read of an address in no region; OutOfRange — an object larger than the
// largest size class (alloc/size_classes.h); Unavailable/DeadlineExceeded — a machine
// did not answer (for a commit, the message says whether the outcome is unknown).
#ifndef FARM_API_FARM_H_
#define FARM_API_FARM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"
#include "farm/base/object_copy.h"
#include "farm/event/context.h"
#include "farm/msg/message.h"
#include "farm/msg/message_ids.h"

namespace farm {

namespace tx {
class Transaction;  // opaque to applications: used only through the functions below
}  // namespace tx

using Tx = tx::Transaction;
using TxHandle = std::shared_ptr<tx::Transaction>;
using ObjBuf = TxObject;
template <typename T>
using Cont = absl::AnyInvocable<void(T)>;

// --- Transactions ---

// A new transaction on the calling thread. Keep the handle until txCommit's
// continuation has run; dropping it earlier aborts the transaction.
TxHandle txCreate(Context& ctx);
// A new object of `size` bytes (zeroed) near `hint` (Addr(): on this machine), written
// at commit; freed again if the transaction does not commit. Aborted when the slot it
// got held an object this transaction read (freed by another one since: a conflict).
void txAlloc(Tx& tx, uint32_t size, Addr hint, Cont<absl::StatusOr<ObjBuf*>> cont);
// Frees the object at commit.
absl::Status txFree(Tx& tx, FatPtr object);
// The transaction's copy of the object (read once; later reads return the same copy).
void txRead(Tx& tx, FatPtr object, Cont<absl::StatusOr<ObjBuf*>> cont);
// The copy, as modified through object->data(), is written at commit.
absl::Status txWrite(Tx& tx, ObjBuf* object);
void txCommit(Tx& tx, Cont<absl::Status> cont);
// Ends the transaction without committing.
void txAbort(Tx& tx);
// What the transaction writes so far, as its commit's log records carry it (entry
// headers and payloads): a replica of every object written gets at most this many
// bytes, plus a record header, in one message, and a message holds at most 65,504
// bytes on the default rings (a larger commit fails with InvalidArgument). Lets an
// application split work into transactions that can commit. O(objects in it).
uint64_t txWriteBytes(const Tx& tx);

// --- Lock-free reads ---

// A lock-free read operation (lockFreeStart .. lockFreeEnd): memory it may read is not
// reused for other objects until it ends. Ends on destruction if not ended before.
class LockFreeOp {
 public:
  explicit LockFreeOp(Context& ctx);
  ~LockFreeOp();
  LockFreeOp(LockFreeOp&& other) noexcept;
  LockFreeOp(const LockFreeOp&) = delete;
  LockFreeOp& operator=(const LockFreeOp&) = delete;
  LockFreeOp& operator=(LockFreeOp&&) = delete;

  Context& ctx() const { return *ctx_; }
  bool active() const { return active_; }
  void End();

 private:
  Context* ctx_;
  bool active_ = true;
};

// A consistent copy of an object's bytes: `version` and `data`, valid during the
// continuation only. (The object reader's own result type: continuations pass through
// unwrapped.)
using LockFreeObject = ObjectRead;

LockFreeOp lockFreeStart(Context& ctx);
void lockFreeRead(LockFreeOp& op, FatPtr object, Cont<absl::StatusOr<LockFreeObject>> cont);
// Several objects of one region lying close together (ascending, not overlapping, within
// 1 MiB; at most 8) with one fabric READ: one LockFreeObject per object, in order,
// valid during the continuation only. Each copy is consistent on its own (see
// tx/object_reader.h); InvalidArgument when the objects are not laid out as required.
void lockFreeReadMany(LockFreeOp& op, std::span<const FatPtr> objects,
                      Cont<absl::StatusOr<std::span<const LockFreeObject>>> cont);
void lockFreeEnd(LockFreeOp& op);

// This thread's lock-free reads so far, for tools' accounting: object reads issued
// (a lockFreeReadMany counts each object), those served from this machine's memory,
// and retries of copies found locked or inconsistent.
struct LockFreeStats {
  uint64_t reads = 0;
  uint64_t local = 0;
  uint64_t retries = 0;
};
LockFreeStats lockFreeStats(Context& ctx);

// This thread's commits so far, for tools' accounting: transactions it coordinated that
// committed or ended in an error, and single-machine commits it served as the primary
// (its own or shipped to it), of which `exclusive` kept their locks exclusive across
// the backup round trip (a read was pinned by another commit, or readable commits are
// off; lock-free readers of their writes wait meanwhile).
struct CommitStats {
  uint64_t committed = 0;
  uint64_t failed = 0;
  uint64_t single_machine_served = 0;
  uint64_t exclusive = 0;
};
CommitStats commitStats(Context& ctx);

// --- Incarnations ---

uint32_t objGetIncarnation(const ObjBuf& object);
// At commit the object gets a new incarnation: pointers with the old one fail with
// FailedPrecondition (a cheap way to invalidate cached pointers). Implies txWrite; the
// new pointer's incarnation is objGetIncarnation(object) + 1 (objCommittedPtr). Once
// per transaction: a second call changes nothing. An object allocated in the
// transaction has no older pointers: nothing changes (OK).
absl::Status objIncrementIncarnation(Tx& tx, ObjBuf* object);
// The pointer to `object` once its transaction commits: the pointer it was read (or
// allocated) by, with the new incarnation if the transaction gives it one. What a
// transaction stores as a pointer to an object it may have renamed must be this (a
// read of the object in the same transaction accepts either name).
FatPtr objCommittedPtr(const ObjBuf& object);

// The bytes an object of `payload` bytes occupies in a region, header and line versions
// included (the worst case over where it may start): for applications' memory accounting.
uint64_t objStoredBytes(uint64_t payload);

// --- Messages ---

// A handler for messages sent with msgSend, run on the receiving worker thread with its
// Context. `message.payload` is valid during the call; answer with msgReply (now or
// later, on the same thread). Declared through the Host before the node starts
// (msgRegisterHandler in farm/api/host.h); ids from the service's own range in
// farm/msg/message_ids.h (kApplicationMsgIds for examples and tests).
using AppHandler = std::function<void(Context& ctx, const Message& message)>;
// Sends `payload` to the handler `id` on the machine the placement names as primary of
// `address`'s region (this machine too), and continues with its reply. The region need
// not exist (placement is consistent hashing of the id); Unimplemented when the machine
// has no such handler; Unavailable when it cannot be reached.
void msgSend(Context& ctx, Addr address, MsgId id, absl::string_view payload,
             Cont<absl::StatusOr<std::string>> cont);
// As msgSend, with the payload built where it is sent (eRPC's in-place messages: no
// intermediate copy): write(dst) fills all `payload_bytes` bytes at dst. It runs at most
// once, before msgSend returns (not at all when the send fails first: no configuration,
// this machine not serving, the payload over the limit).
void msgSend(Context& ctx, Addr address, MsgId id, size_t payload_bytes,
             absl::FunctionRef<void(char* dst)> write, Cont<absl::StatusOr<std::string>> cont);
// The machines of the current configuration, ascending (empty before the first one):
// ctx.members().
std::vector<NodeId> clusterMembers(Context& ctx);
// As msgSend, to a machine by id (e.g. to exchange pointers to the objects it created).
void msgSendTo(Context& ctx, NodeId machine, MsgId id, absl::string_view payload,
               Cont<absl::StatusOr<std::string>> cont);
absl::Status msgReply(Context& ctx, const Message& message, absl::string_view payload);
absl::Status msgReplyError(Context& ctx, const Message& message, const absl::Status& error);

}  // namespace farm

#endif  // FARM_API_FARM_H_
