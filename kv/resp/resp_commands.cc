#include "kv/resp/resp_commands.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm::kv::resp {
namespace {

// name, id, arity, access, first/last/step key, allowed before AUTH, not queued.
constexpr CommandSpec kCommands[] = {
    {"get", CommandId::kGet, 2, Access::kRead, 1, 1, 1},
    {"set", CommandId::kSet, -3, Access::kWrite, 1, 1, 1},
    {"ping", CommandId::kPing, -1, Access::kLocal},
    {"echo", CommandId::kEcho, 2, Access::kLocal},
    {"del", CommandId::kDel, -2, Access::kWrite, 1, -1, 1},
    {"exists", CommandId::kExists, -2, Access::kRead, 1, -1, 1},
    {"mget", CommandId::kMGet, -2, Access::kRead, 1, -1, 1},
    {"mset", CommandId::kMSet, -3, Access::kWrite, 1, -1, 2},
    {"incr", CommandId::kIncr, 2, Access::kWrite, 1, 1, 1},
    {"decr", CommandId::kDecr, 2, Access::kWrite, 1, 1, 1},
    {"incrby", CommandId::kIncrBy, 3, Access::kWrite, 1, 1, 1},
    {"decrby", CommandId::kDecrBy, 3, Access::kWrite, 1, 1, 1},
    {"dbsize", CommandId::kDbSize, 1, Access::kExclusive},
    {"info", CommandId::kInfo, -1, Access::kExclusive},
    {"multi", CommandId::kMulti, 1, Access::kLocal, 0, 0, 0, false, true},
    {"exec", CommandId::kExec, 1, Access::kExclusive, 0, 0, 0, false, true},
    {"discard", CommandId::kDiscard, 1, Access::kExclusive, 0, 0, 0, false, true},
    {"watch", CommandId::kWatch, -2, Access::kExclusive, 1, -1, 1, false, true},
    {"unwatch", CommandId::kUnwatch, 1, Access::kExclusive},
    {"auth", CommandId::kAuth, -2, Access::kLocal, 0, 0, 0, true, false},
    {"quit", CommandId::kQuit, -1, Access::kLocal, 0, 0, 0, true, true},
    {"select", CommandId::kSelect, 2, Access::kLocal},
    {"client", CommandId::kClient, -2, Access::kLocal},
    {"config", CommandId::kConfig, -2, Access::kLocal},
    {"command", CommandId::kCommand, -1, Access::kLocal},
};

// Redis formats arguments with "%s": a NUL byte ends them.
absl::string_view UpToNul(absl::string_view s) {
  const size_t nul = s.find('\0');
  return nul == absl::string_view::npos ? s : s.substr(0, nul);
}

}  // namespace

const CommandSpec* FindCommand(absl::string_view name) {
  for (const CommandSpec& spec : kCommands) {
    if (spec.name.size() == name.size() && absl::EqualsIgnoreCase(spec.name, name)) return &spec;
  }
  return nullptr;
}

bool ArityOk(const CommandSpec& spec, size_t argc) {
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

std::string UnknownSubcommandMessage(absl::string_view subcommand, absl::string_view command) {
  return absl::StrCat("ERR unknown subcommand '", UpToNul(subcommand).substr(0, 128), "'. Try ",
                      absl::AsciiStrToUpper(command), " HELP.");
}

size_t Call::bytes() const {
  size_t total = sizeof(Call);
  for (size_t i = 0; i < argc; ++i) total += argv[i].size() + sizeof(std::string);
  return total;
}

}  // namespace farm::kv::resp
