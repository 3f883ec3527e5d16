// Redis 7's texts for the errors every RESP service answers alike (clients and tests
// match on them), and its counters for farm_admin stats.
#ifndef FARM_RESP_REDIS_ERRORS_H_
#define FARM_RESP_REDIS_ERRORS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::resp {

class RespServer;

// "ERR unknown command 'NAME', with args beginning with: 'a' 'b' " (`args` from the
// command's name on; each text cut at a NUL and at Redis's 128 bytes).
std::string UnknownCommandMessage(absl::Span<const std::string> args);
// "ERR wrong number of arguments for 'name' command".
std::string ArityMessage(absl::string_view name);
// "ERR unknown subcommand 'sub'. Try COMMAND HELP."
std::string UnknownSubcommandMessage(absl::string_view subcommand, absl::string_view command);

// A server's statistics as a service's counters (farm/api/service.h: name, value).
std::vector<std::pair<std::string, uint64_t>> ServerCounters(const RespServer& server);

}  // namespace farm::resp

#endif  // FARM_RESP_REDIS_ERRORS_H_
