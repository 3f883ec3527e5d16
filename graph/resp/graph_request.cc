#include "graph/resp/graph_request.h"

#include <limits>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "resp/strict_int.h"

namespace farm::graph {
namespace {

using Error = std::optional<std::string>;

// Reads args[i], args[i+1], ... in order; the first failure sticks.
class ArgReader {
 public:
  explicit ArgReader(absl::Span<std::string> args) : args_(args) {}

  void Int64(int64_t* out) {
    if (!error_ && !ParseInt64Arg(Next(), out)) error_ = kNotAnInteger;
  }
  void Int32(int32_t* out) {
    if (!error_ && !ParseInt32Arg(Next(), out)) error_ = kNotAnInteger;
  }
  void VisibilityArg(Visibility* out) {
    int64_t v = 0;
    Int64(&v);
    if (error_) return;
    if (v != 0 && v != 1) {
      error_ = "ERR visibility must be 0 (hidden) or 1 (visible)";
      return;
    }
    *out = v == 1 ? Visibility::kVisible : Visibility::kHidden;
  }
  void Uint32(const char* name, uint32_t max, uint32_t* out) {
    int64_t v = 0;
    Int64(&v);
    if (error_) return;
    if (v < 0 || v > max) {
      error_ = absl::StrCat("ERR ", name, " is out of range, must be between 0 and ", max);
      return;
    }
    *out = static_cast<uint32_t>(v);
  }
  void Data(const char* what, uint64_t max, std::string* out) {
    if (error_) return;
    std::string& arg = Next();
    if (arg.size() > max) {
      error_ = absl::StrCat("ERR ", what, " data is too large (", arg.size(),
                            " bytes; the limit is ", max, ")");
      return;
    }
    out->swap(arg);  // the parser reuses our old (empty) string
  }
  std::string& Next() { return args_[next_++]; }
  Error error() { return std::move(error_); }

 private:
  absl::Span<std::string> args_;
  size_t next_ = 1;  // args_[0] is the command's name
  Error error_;
};

void ReadNode(ArgReader& r, Node* node) {
  r.Int32(&node->type);
  r.Int64(&node->version);
  r.Int32(&node->time);
  r.Data("node", kMaxNodeDataBytes, &node->data);
}

}  // namespace

bool ParseInt64Arg(const std::string& arg, int64_t* out) {
  return ::farm::resp::ParseStrictInt64(arg, out);
}

bool ParseInt32Arg(const std::string& arg, int32_t* out) {
  int64_t v = 0;
  if (!ParseInt64Arg(arg, &v) || v < std::numeric_limits<int32_t>::min() ||
      v > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  *out = static_cast<int32_t>(v);
  return true;
}

std::optional<std::string> ParseGraphRequest(const GraphCommandSpec& spec,
                                             absl::Span<std::string> args, GraphRequest* request) {
  request->id = spec.id;
  ArgReader r(args);
  switch (spec.id) {
    case GraphCommandId::kNodeAdd:
      ReadNode(r, &request->node);
      break;
    case GraphCommandId::kNodeLoad:
      // (type version time data) per node.
      if ((args.size() - 1) % 4 != 0) return ArityMessage(spec.name);
      request->nodes.resize((args.size() - 1) / 4);
      for (Node& n : request->nodes) ReadNode(r, &n);
      break;
    case GraphCommandId::kNodeUpdate:
      r.Int64(&request->node.id);
      ReadNode(r, &request->node);
      break;
    case GraphCommandId::kNodeGet:
    case GraphCommandId::kNodeDelete:
      r.Int64(&request->node.id);
      r.Int32(&request->node.type);
      break;
    case GraphCommandId::kNodeReset:
      r.Int64(&request->start_id);
      break;
    case GraphCommandId::kLinkAdd: {
      Link& l = request->link;
      r.Int64(&l.id1);
      r.Int64(&l.type);
      r.Int64(&l.id2);
      r.VisibilityArg(&l.visibility);
      r.Int32(&l.version);
      r.Int64(&l.time);
      r.Data("link", kMaxLinkDataBytes, &l.data);
      break;
    }
    case GraphCommandId::kLinkLoad: {
      // id1 type, then (id2 visibility version time data) per link; none: the load ends.
      if ((args.size() - 3) % 5 != 0) return ArityMessage(spec.name);
      r.Int64(&request->link.id1);
      r.Int64(&request->link.type);
      request->links.resize((args.size() - 3) / 5);
      for (Link& l : request->links) {
        l.id1 = request->link.id1;
        l.type = request->link.type;
        r.Int64(&l.id2);
        r.VisibilityArg(&l.visibility);
        r.Int32(&l.version);
        r.Int64(&l.time);
        r.Data("link", kMaxLinkDataBytes, &l.data);
      }
      break;
    }
    case GraphCommandId::kLinkDelete:
      r.Int64(&request->link.id1);
      r.Int64(&request->link.type);
      r.Int64(&request->link.id2);
      if (args.size() > 5 || (args.size() == 5 && !absl::EqualsIgnoreCase(args[4], "expunge"))) {
        if (std::optional<std::string> e = r.error()) return e;
        return "ERR syntax error";
      }
      request->expunge = args.size() == 5;
      break;
    case GraphCommandId::kLinkGet:
      r.Int64(&request->link.id1);
      r.Int64(&request->link.type);
      request->id2s.resize(args.size() - 3);
      for (int64_t& id2 : request->id2s) r.Int64(&id2);
      break;
    case GraphCommandId::kLinkRange: {
      LinkRange& range = request->range;
      r.Int64(&range.id1);
      r.Int64(&range.type);
      r.Int64(&range.min_time);
      r.Int64(&range.max_time);
      r.Uint32("offset", std::numeric_limits<uint32_t>::max(), &range.offset);
      r.Uint32("limit", kDefaultRangeLimit, &range.limit);
      break;
    }
    case GraphCommandId::kLinkCount:
      r.Int64(&request->link.id1);
      r.Int64(&request->link.type);
      break;
    default:
      return absl::StrCat("ERR '", spec.name, "' is not a graph command");
  }
  return r.error();
}

}  // namespace farm::graph
