// The cluster-wide end-of-epoch round (paper section 3.5): memory freed before a round
// started may be reused for another object size once the round completes, because by
// then every operation that started before it, on every member, has ended.
//
// A round sends kEndOfEpochMsgId to every other member; each answers once its own
// EpochManager is quiescent for the request (EpochManager::AwaitQuiescence). The
// initiator waits for its own machine too. The paper aggregates per machine; so do we:
// one request per member, handled by whichever of its threads receives it.
//
// Wire format: the request and the response are exactly one byte, kAllocWireFormat. A
// request of another size or tag is answered with InvalidArgument.
//
// Threads and lifetimes:
//   - RegisterEndOfEpochHandler runs before messenger.Start(). `epochs` must outlive the
//     Messenger (the handler calls it). A request waiting for quiescence holds the
//     MsgThread that received it until it replies on that thread: when the Messenger is
//     destroyed while a request waits, its worker loops must already be stopped for good
//     (the reply is then posted but never runs) and the EpochManager must be destroyed
//     before the loops (dropping the waiter).
//   - RunEndOfEpochRound runs on `thread`'s loop thread; `done` runs there too, exactly
//     once and never from inside RunEndOfEpochRound. `local` must outlive the round.
#ifndef FARM_ALLOC_END_OF_EPOCH_H_
#define FARM_ALLOC_END_OF_EPOCH_H_

#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "alloc/epoch.h"
#include "farm/msg/messenger.h"
#include "farm/msg/msg_thread.h"

namespace farm::alloc {

// Registers the kEndOfEpochMsgId handler: checks the request, waits for `epochs` to be
// quiescent (AwaitQuiescence on the receiving thread's loop), then replies from the
// receiving thread. Errors: those of Messenger::RegisterHandler.
absl::Status RegisterEndOfEpochHandler(Messenger& messenger, EpochManager& epochs);

// Runs one round from `thread` (whose node is `self`) to `members`; `self` and
// duplicates in `members` are skipped (the local machine always takes part, through
// `local`). `done` gets OK once every member has answered and `local` is quiescent.
// When a member fails (Unavailable: not connected or link lost; DeadlineExceeded: no
// answer within `timeout`; an error reply), `done` gets the first failure, with the same
// code and a message naming the node (and listing any other failed nodes), after every
// outstanding answer is in or has failed. `timeout` defaults to the messenger's RPC
// timeout. A round with no other member completes after local quiescence only.
void RunEndOfEpochRound(MsgThread& thread, NodeId self, EpochManager& local,
                        std::vector<NodeId> members,
                        absl::AnyInvocable<void(absl::Status)> done,
                        absl::Duration timeout = absl::ZeroDuration());

}  // namespace farm::alloc

#endif  // FARM_ALLOC_END_OF_EPOCH_H_
