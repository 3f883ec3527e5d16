#include "kv/resp/command_command.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "kv/resp/resp_commands.h"
#include "kv/resp/resp_names.h"

namespace farm::kv::resp {
namespace {

void WriteEntry(const CommandSpec& spec, RespWriter& w) {
  w.ArrayHeader(10);
  w.Bulk(spec.name);
  w.Integer(spec.arity);
  std::vector<absl::string_view> flags;
  // Exclusive commands run alone here; Redis's flags say what they do to the data.
  const bool reads = spec.access == Access::kRead || spec.id == CommandId::kScan || spec.id == CommandId::kKeys ||
                     spec.id == CommandId::kDbSize;
  const bool writes =
      spec.access == Access::kWrite || spec.id == CommandId::kFlushAll || spec.id == CommandId::kFlushDb;
  if (reads) flags.push_back("readonly");
  if (writes) flags.push_back("write");
  if (spec.allowed_before_auth) flags.push_back("no-auth");
  w.ArrayHeader(flags.size());
  for (absl::string_view f : flags) w.SimpleString(f);
  w.Integer(spec.first_key);
  w.Integer(spec.last_key);
  w.Integer(spec.key_step);
  for (int empty = 0; empty < 4; ++empty) w.ArrayHeader(0);  // ACL categories, tips, key specs, subcommands
}

}  // namespace

std::string CommandCommandReply(absl::Span<const std::string> args) {
  std::string reply;
  RespWriter w(&reply);
  const absl::Span<const CommandSpec> all = AllCommands();
  if (args.size() == 1) {
    w.ArrayHeader(all.size());
    for (const CommandSpec& spec : all) WriteEntry(spec, w);
    return reply;
  }
  const std::string sub = absl::AsciiStrToLower(args[1]);
  if (sub == "count") {
    if (args.size() != 2) return ErrorReply(ArityMessage("command|count"));
    w.Integer(static_cast<int64_t>(all.size()));
  } else if (sub == "list") {
    if (args.size() != 2) return ErrorReply("ERR syntax error");  // FILTERBY is not taken
    w.ArrayHeader(all.size());
    for (const CommandSpec& spec : all) w.Bulk(spec.name);
  } else if (sub == "info") {
    if (args.size() == 2) return CommandCommandReply(args.subspan(0, 1));
    w.ArrayHeader(args.size() - 2);
    for (size_t i = 2; i < args.size(); ++i) {
      const CommandSpec* spec = FindCommand(args[i]);
      if (spec == nullptr) {
        w.NullArray();
      } else {
        WriteEntry(*spec, w);
      }
    }
  } else if (sub == "docs") {
    w.ArrayHeader(0);
  } else {
    return ErrorReply(UnknownSubcommandMessage(args[1], "command"));
  }
  return reply;
}

}  // namespace farm::kv::resp
