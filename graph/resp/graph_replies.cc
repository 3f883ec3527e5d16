#include "graph/resp/graph_replies.h"

#include "absl/strings/str_cat.h"
#include "farm/api/log.h"

namespace farm::graph {

void WriteNode(const Node& node, ::farm::resp::RespWriter& w) {
  w.ArrayHeader(5);
  w.Integer(node.id);
  w.Integer(node.type);
  w.Integer(node.version);
  w.Integer(node.time);
  w.Bulk(node.data);
}

void WriteLink(const Link& link, ::farm::resp::RespWriter& w) {
  w.ArrayHeader(7);
  w.Integer(link.id1);
  w.Integer(link.type);
  w.Integer(link.id2);
  w.Integer(link.visibility == Visibility::kVisible ? 1 : 0);
  w.Integer(link.version);
  w.Integer(link.time);
  w.Bulk(link.data);
}

void WriteLinks(const std::vector<Link>& links, ::farm::resp::RespWriter& w) {
  using ::farm::resp::RespWriter;
  // At most: each link's array header, six integers and its data's bulk.
  constexpr size_t kMaxLinkFraming = RespWriter::kMaxIntegerBytes * 7 + RespWriter::kMaxBulkFramingBytes;
  size_t bytes = RespWriter::kMaxIntegerBytes;
  for (const Link& link : links) bytes += kMaxLinkFraming + link.data.size();
  w.Reserve(bytes);
  w.ArrayHeader(links.size());
  for (const Link& link : links) WriteLink(link, w);
}

std::string StoreErrorReply(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
      // The store's argument checks (graph/store.h); the session checks most first.
      return ::farm::resp::ErrorReply(absl::StrCat("ERR ", status.message()));
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return ::farm::resp::ErrorReply(
          "TRYAGAIN the graph store did not answer in time; a write may or may not have "
          "happened");
    case absl::StatusCode::kAborted:
      return ::farm::resp::ErrorReply(
          "TRYAGAIN the operation conflicted with others too often and changed nothing");
    case absl::StatusCode::kResourceExhausted:
      return ::farm::resp::ErrorReply("OOM the graph store's memory is full");
    default:
      FARM_LOG(kWarning, "graph RESP: store operation failed: %s", status.ToString());
      return ::farm::resp::ErrorReply(absl::StrCat(
          "ERR the graph store failed (", absl::StatusCodeToString(status.code()), ")"));
  }
}

}  // namespace farm::graph
