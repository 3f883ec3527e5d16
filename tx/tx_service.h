// TxService: the transaction protocol on a node — one ThreadContext per messenger
// thread, and the handlers of tx_messages.h, registered before the messenger starts.
// A request is handled on the thread that receives it, by that thread's context.
// Malformed payloads are answered InvalidArgument.
//
// Recovery after a restart (recovery.h): the outcomes the node's log held answer other
// nodes' kTxOutcomeMsgId queries, and ResolveInDoubt settles the transactions the crash
// left in doubt here: it asks every participant of each (the nodes its PREPARE went to,
// logged with it) what its log said, commits each one that some replica logged a commit
// decision for, and aborts the rest. That
// is safe because a commit decision is logged (durable) at a replica before any primary
// applies it and before the coordinator reports it, and after a restart no coordinator
// of the old configuration can send another (its epoch is gone); so the set of
// replicas that logged a commit is fixed, and every node that asks gets the same
// answer — provided every participant's log is heard: one that does not answer (not
// restarted yet) is asked again until it does (a node that never comes back is
// failover's to handle).
//
// Threads: Create on the node's start-up thread (before Messenger::Start); context(i)
// only on messenger thread i. Destroy each context on its thread (StopThread), before
// the messenger and the allocator service go.
#ifndef FARM_TX_TX_SERVICE_H_
#define FARM_TX_TX_SERVICE_H_

#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "alloc/alloc_service.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tx/recovery.h"
#include "tx/thread_context.h"

namespace farm::tx {

// What the node brings from its log to a start.
struct TxRecovery {
  uint32_t boot = 0;  // this start's number (transaction ids)
  absl::flat_hash_map<TxKey, TxOutcome> outcomes;
};

class TxService {
 public:
  static absl::StatusOr<std::unique_ptr<TxService>> Create(NodeId self, Messenger* messenger,
                                                           Fabric* fabric,
                                                           alloc::Allocator* allocator,
                                                           alloc::AllocService* alloc_service,
                                                           const TxOptions& options = {},
                                                           TxRecovery recovery = {});

  ThreadContext* context(size_t i) const { return contexts_[i].get(); }
  size_t thread_count() const { return contexts_.size(); }
  void StopThread(size_t i) { contexts_[i].reset(); }

  // On thread 0's loop, once the node's own regions are adopted: takes the in-doubt
  // transactions over (ThreadContext::RestoreInDoubt) and settles them as above;
  // `done` (on that loop) once every one is decided, or with the error that stopped it.
  void ResolveInDoubt(std::vector<InDoubt> in_doubt, absl::AnyInvocable<void(const absl::Status&)> done);

 private:
  TxService() = default;
  absl::Status RegisterHandlers(Messenger* messenger);
  ThreadContext* ContextFor(MsgThread& thread, const Message& message);
  void AskOutcomes(std::shared_ptr<struct Resolution> resolution);
  void Settle(std::shared_ptr<struct Resolution> resolution);

  std::vector<std::unique_ptr<ThreadContext>> contexts_;
  absl::flat_hash_map<TxKey, TxOutcome> outcomes_;  // fixed after Create
};

}  // namespace farm::tx

#endif  // FARM_TX_TX_SERVICE_H_
