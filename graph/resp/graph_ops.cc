#include "graph/resp/graph_ops.h"

#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "graph/resp/graph_replies.h"
#include "resp/resp_writer.h"

namespace farm::graph {
namespace {

using ::farm::resp::RespWriter;

// A continuation that encodes a successful result with `write`, or the error.
template <typename T, typename Write>
Done<absl::StatusOr<T>> Reply(ReplyDone done, Write write) {
  return [done = std::move(done), write = std::move(write)](absl::StatusOr<T> result) mutable {
    if (!result.ok()) return done(StoreErrorReply(result.status()));
    std::string reply;
    RespWriter w(&reply);
    write(*result, w);
    done(std::move(reply));
  };
}

Done<absl::StatusOr<bool>> BoolReply(ReplyDone done) {
  return Reply<bool>(std::move(done), [](bool b, RespWriter& w) { w.Integer(b ? 1 : 0); });
}

}  // namespace

void RunGraphRequest(GraphStore& store, GraphRequest request, ReplyDone done) {
  switch (request.id) {
    case GraphCommandId::kNodeAdd:
      return store.AddNode(std::move(request.node),
                           Reply<int64_t>(std::move(done), [](int64_t id, RespWriter& w) { w.Integer(id); }));
    case GraphCommandId::kNodeLoad:
      return store.AddNodes(std::move(request.nodes),
                            Reply<int64_t>(std::move(done), [](int64_t first, RespWriter& w) { w.Integer(first); }));
    case GraphCommandId::kNodeGet:
      return store.GetNode(request.node.id, request.node.type,
                           Reply<std::optional<Node>>(std::move(done), [](const std::optional<Node>& node,
                                                                          RespWriter& w) {
                             if (node.has_value()) {
                               WriteNode(*node, w);
                             } else {
                               w.NullBulk();
                             }
                           }));
    case GraphCommandId::kNodeUpdate:
      return store.UpdateNode(std::move(request.node), BoolReply(std::move(done)));
    case GraphCommandId::kNodeDelete:
      return store.DeleteNode(request.node.id, request.node.type, BoolReply(std::move(done)));
    case GraphCommandId::kNodeReset:
      return store.ResetNodeIds(request.start_id, [done = std::move(done)](absl::Status s) mutable {
        done(s.ok() ? ::farm::resp::SimpleStringReply("OK") : StoreErrorReply(s));
      });
    case GraphCommandId::kLinkAdd:
      return store.AddLink(std::move(request.link), BoolReply(std::move(done)));
    case GraphCommandId::kLinkLoad:
      return store.LoadLinks(request.link.id1, request.link.type, std::move(request.links), request.load_token,
                             Reply<uint64_t>(std::move(done), [](uint64_t n, RespWriter& w) {
                               w.Integer(static_cast<int64_t>(n));
                             }));
    case GraphCommandId::kLinkDelete:
      return store.DeleteLink(request.link.id1, request.link.type, request.link.id2,
                              request.expunge, BoolReply(std::move(done)));
    case GraphCommandId::kLinkGet: {
      // The store reads the ids through a span: they live until the continuation ran.
      auto id2s = std::make_shared<const std::vector<int64_t>>(std::move(request.id2s));
      auto write = [id2s](const std::vector<Link>& links, RespWriter& w) { WriteLinks(links, w); };
      return store.GetLinks(request.link.id1, request.link.type, *id2s,
                            Reply<std::vector<Link>>(std::move(done), std::move(write)));
    }
    case GraphCommandId::kLinkRange:
      return store.GetLinkList(request.range,
                               Reply<std::vector<Link>>(std::move(done), [](const std::vector<Link>& links,
                                                                            RespWriter& w) {
                                 WriteLinks(links, w);
                               }));
    case GraphCommandId::kLinkCount:
      return store.CountLinks(request.link.id1, request.link.type,
                              Reply<uint64_t>(std::move(done), [](uint64_t n, RespWriter& w) {
                                w.Integer(static_cast<int64_t>(n));
                              }));
    default:
      return done(::farm::resp::ErrorReply("ERR not a graph command"));
  }
}

}  // namespace farm::graph
