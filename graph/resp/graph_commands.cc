#include "graph/resp/graph_commands.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm::graph {
namespace {

constexpr GraphCommandSpec kCommands[] = {
    {"ping", GraphCommandId::kPing, -1, false},
    {"echo", GraphCommandId::kEcho, 2, false},
    {"quit", GraphCommandId::kQuit, -1, false},
    {"select", GraphCommandId::kSelect, 2, false},
    {"command", GraphCommandId::kCommand, -1, false},
    {"node.add", GraphCommandId::kNodeAdd, 5, true},
    {"node.get", GraphCommandId::kNodeGet, 3, true},
    {"node.update", GraphCommandId::kNodeUpdate, 6, true},
    {"node.delete", GraphCommandId::kNodeDelete, 3, true},
    {"node.reset", GraphCommandId::kNodeReset, 2, true},
    {"link.add", GraphCommandId::kLinkAdd, 8, true},
    {"link.delete", GraphCommandId::kLinkDelete, -4, true},
    {"link.get", GraphCommandId::kLinkGet, -4, true},
    {"link.range", GraphCommandId::kLinkRange, 7, true},
    {"link.count", GraphCommandId::kLinkCount, 3, true},
};

// Redis formats arguments with "%s": a NUL byte ends them.
absl::string_view UpToNul(absl::string_view s) {
  const size_t nul = s.find('\0');
  return nul == absl::string_view::npos ? s : s.substr(0, nul);
}

}  // namespace

const GraphCommandSpec* FindGraphCommand(absl::string_view name) {
  for (const GraphCommandSpec& spec : kCommands) {
    if (absl::EqualsIgnoreCase(spec.name, name)) return &spec;
  }
  return nullptr;
}

absl::Span<const GraphCommandSpec> AllGraphCommands() { return kCommands; }

bool ArityOk(const GraphCommandSpec& spec, size_t argc) {
  if (spec.arity >= 0) return argc == static_cast<size_t>(spec.arity);
  return argc >= static_cast<size_t>(-spec.arity);
}

std::string UnknownCommandMessage(absl::Span<const std::string> args) {
  // Redis 7: "unknown command '%.128s', with args beginning with: " then "'%.*s' " for
  // each argument while the list is under 128 bytes, each cut to what remains of 128.
  std::string list;
  for (size_t i = 1; i < args.size() && list.size() < 128; ++i) {
    const absl::string_view arg = UpToNul(args[i]);
    absl::StrAppend(&list, "'", arg.substr(0, 128 - list.size()), "' ");
  }
  const absl::string_view name = UpToNul(args.empty() ? absl::string_view() : args[0]);
  return absl::StrCat("ERR unknown command '", name.substr(0, 128),
                      "', with args beginning with: ", list);
}

std::string ArityMessage(absl::string_view name) {
  return absl::StrCat("ERR wrong number of arguments for '", name, "' command");
}

}  // namespace farm::graph
