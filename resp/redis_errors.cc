#include "resp/redis_errors.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "resp/resp_server.h"

namespace farm::resp {
namespace {

absl::string_view UpToNul(absl::string_view s) {
  const size_t nul = s.find('\0');
  return nul == absl::string_view::npos ? s : s.substr(0, nul);
}

}  // namespace

std::string UnknownCommandMessage(absl::Span<const std::string> args) {
  // Redis 7: "unknown command '%.128s', with args beginning with: " then "'%.*s' " for
  // each argument while the list is under 128 bytes, each cut to what remains of 128.
  std::string list;
  for (size_t i = 1; i < args.size() && list.size() < 128; ++i) {
    const absl::string_view arg = UpToNul(args[i]);
    absl::StrAppend(&list, "'", arg.substr(0, 128 - list.size()), "' ");
  }
  const absl::string_view name = UpToNul(args.empty() ? absl::string_view() : args[0]);
  return absl::StrCat("ERR unknown command '", name.substr(0, 128), "', with args beginning with: ", list);
}

std::string ArityMessage(absl::string_view name) {
  return absl::StrCat("ERR wrong number of arguments for '", name, "' command");
}

std::string UnknownSubcommandMessage(absl::string_view subcommand, absl::string_view command) {
  return absl::StrCat("ERR unknown subcommand '", UpToNul(subcommand).substr(0, 128), "'. Try ",
                      absl::AsciiStrToUpper(command), " HELP.");
}

std::vector<std::pair<std::string, uint64_t>> ServerCounters(const RespServer& server) {
  const RespStats s = server.stats();
  return {{"resp_connections_open", s.connections_open},
          {"resp_connections_accepted", s.connections_accepted},
          {"resp_connections_rejected", s.connections_rejected},
          {"resp_commands", s.commands},
          {"resp_error_replies", s.error_replies},
          {"resp_protocol_errors", s.protocol_errors}};
}

}  // namespace farm::resp
