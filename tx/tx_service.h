// TxService: the transaction protocol on a node — one ThreadContext per messenger
// thread, and the handlers of tx_messages.h, registered before the messenger starts.
// A request is handled on the thread that receives it, by that thread's context.
// Malformed payloads are answered InvalidArgument.
//
// Threads: Create on the node's start-up thread (before Messenger::Start); context(i)
// only on messenger thread i. Destroy each context on its thread (StopThread), before
// the messenger and the allocator service go.
#ifndef FARM_TX_TX_SERVICE_H_
#define FARM_TX_TX_SERVICE_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "alloc/alloc_service.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tx/thread_context.h"

namespace farm::tx {

class TxService {
 public:
  static absl::StatusOr<std::unique_ptr<TxService>> Create(NodeId self, Messenger* messenger,
                                                           Fabric* fabric,
                                                           alloc::Allocator* allocator,
                                                           alloc::AllocService* alloc_service,
                                                           const TxOptions& options = {});
  ThreadContext* context(size_t i) const { return contexts_[i].get(); }
  size_t thread_count() const { return contexts_.size(); }
  void StopThread(size_t i) { contexts_[i].reset(); }

 private:
  TxService() = default;
  absl::Status RegisterHandlers(Messenger* messenger);
  ThreadContext* ContextFor(MsgThread& thread, const Message& message);

  std::vector<std::unique_ptr<ThreadContext>> contexts_;
};

}  // namespace farm::tx

#endif  // FARM_TX_TX_SERVICE_H_
