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
    {"node.load", GraphCommandId::kNodeLoad, -5, true},
    {"node.get", GraphCommandId::kNodeGet, 3, true},
    {"node.update", GraphCommandId::kNodeUpdate, 6, true},
    {"node.delete", GraphCommandId::kNodeDelete, 3, true},
    {"node.reset", GraphCommandId::kNodeReset, 2, true},
    {"link.add", GraphCommandId::kLinkAdd, 8, true},
    {"link.load", GraphCommandId::kLinkLoad, -3, true},
    {"link.delete", GraphCommandId::kLinkDelete, -4, true},
    {"link.get", GraphCommandId::kLinkGet, -4, true},
    {"link.range", GraphCommandId::kLinkRange, 7, true},
    {"link.count", GraphCommandId::kLinkCount, 3, true},
};

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

}  // namespace farm::graph
