#include "graph/resp/graph_local_commands.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "graph/resp/graph_request.h"
#include "resp/resp_writer.h"

namespace farm::graph {

std::string RunLocalCommand(const GraphCommandSpec& spec, absl::Span<const std::string> args) {
  using ::farm::resp::ErrorReply;
  std::string reply;
  ::farm::resp::RespWriter w(&reply);
  switch (spec.id) {
    case GraphCommandId::kPing:
      if (args.size() > 2) return ErrorReply(ArityMessage("ping"));
      if (args.size() == 2) {
        w.Bulk(args[1]);
      } else {
        w.SimpleString("PONG");
      }
      return reply;
    case GraphCommandId::kEcho:
      w.Bulk(args[1]);
      return reply;
    case GraphCommandId::kSelect: {
      int64_t db = 0;
      if (!ParseInt64Arg(args[1], &db)) return ErrorReply(kNotAnInteger);
      if (db != 0) return ErrorReply("ERR DB index is out of range");
      return ::farm::resp::SimpleStringReply("OK");
    }
    case GraphCommandId::kCommand:
      if (args.size() == 2 && absl::EqualsIgnoreCase(args[1], "count")) {
        w.Integer(static_cast<int64_t>(AllGraphCommands().size()));
      } else {
        w.ArrayHeader(0);
      }
      return reply;
    default:
      return ErrorReply(absl::StrCat("ERR '", spec.name, "' is not a connection command"));
  }
}

}  // namespace farm::graph
