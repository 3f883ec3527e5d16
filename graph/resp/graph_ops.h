// RunGraphRequest: one parsed graph command (graph_request.h) as one GraphStore
// operation, and its reply.
//
//   NODE.ADD     AddNode       :id
//   NODE.GET     GetNode       *5 [id type version time data], or $-1 (no node / other type)
//   NODE.UPDATE  UpdateNode    :1 updated, :0 no node (id, type)
//   NODE.DELETE  DeleteNode    :1 deleted, :0 no node (id, type)
//   NODE.RESET   ResetNodeIds  +OK
//   LINK.ADD     AddLink       :1 new link, :0 an existing one replaced
//   LINK.DELETE  DeleteLink    :1 found (hidden, or removed with EXPUNGE), :0 not found
//   LINK.GET     GetLinks      *n links found, hidden ones too, in the order asked
//   LINK.RANGE   GetLinkList   *n visible links, newest first
//   LINK.COUNT   CountLinks    :visible links of (id1, type)
// A failed operation replies StoreErrorReply (graph_replies.h).
//
// Threads: the store's worker thread. `done` runs exactly once, on that thread, later
// (the store never calls back inside the call; only a request that is not a graph
// command, which ParseGraphRequest never yields, is refused at once). The operation's
// inputs are owned by the call and its continuation: the caller may go away meanwhile.
#ifndef FARM_GRAPH_RESP_GRAPH_OPS_H_
#define FARM_GRAPH_RESP_GRAPH_OPS_H_

#include <string>

#include "absl/functional/any_invocable.h"
#include "graph/resp/graph_request.h"
#include "graph/store.h"

namespace farm::graph {

// Gets one encoded reply.
using ReplyDone = absl::AnyInvocable<void(std::string reply)>;

void RunGraphRequest(GraphStore& store, GraphRequest request, ReplyDone done);

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_OPS_H_
