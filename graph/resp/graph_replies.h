// How the graph store's records and errors become RESP replies.
//
//   a node   *5  :id :type :version :time $data
//   a link   *7  :id1 :type :id2 :visibility :version :time $data
//   a store error (absl::Status), by code:
//     InvalidArgument                 -ERR <the store's message>
//     Unavailable, DeadlineExceeded   -TRYAGAIN the graph store did not answer in time;
//                                      a write may or may not have happened
//     Aborted (conflicted every try)  -TRYAGAIN the operation conflicted with others too
//                                      often and changed nothing
//     ResourceExhausted               -OOM the graph store's memory is full
//     anything else                   -ERR the graph store failed (<CODE>) — the store's
//                                      message (addresses, machines) is logged, not sent
//
// Stateless: callable from any thread.
#ifndef FARM_GRAPH_RESP_GRAPH_REPLIES_H_
#define FARM_GRAPH_RESP_GRAPH_REPLIES_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/types.h"
#include "resp/resp_writer.h"

namespace farm::graph {

void WriteNode(const Node& node, ::farm::resp::RespWriter& w);
void WriteLink(const Link& link, ::farm::resp::RespWriter& w);
// An array of links.
void WriteLinks(const std::vector<Link>& links, ::farm::resp::RespWriter& w);

// The encoded error reply of a failed store operation (see above).
std::string StoreErrorReply(const absl::Status& status);

}  // namespace farm::graph

#endif  // FARM_GRAPH_RESP_GRAPH_REPLIES_H_
