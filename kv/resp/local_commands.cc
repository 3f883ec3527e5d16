#include "kv/resp/local_commands.h"

#include <fnmatch.h>

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/command_command.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

// Compares without an early exit, so the time taken depends only on the guess's length.
// `secret` is not empty.
bool SecretEquals(absl::string_view guess, absl::string_view secret) {
  unsigned diff = guess.size() == secret.size() ? 0 : 1;
  for (size_t i = 0; i < guess.size(); ++i) {
    diff |= static_cast<unsigned char>(guess[i] ^ secret[i % secret.size()]);
  }
  return diff == 0;
}

std::string Auth(absl::Span<const std::string> args, const LocalEnv& env, ConnectionState& state) {
  if (args.size() > 3) return ErrorReply("ERR syntax error");
  const bool has_user = args.size() == 3;
  if (env.password.empty()) {
    if (!has_user) {
      return ErrorReply(
          "ERR AUTH <password> called without any password configured for the default user. "
          "Are you sure your configuration is correct?");
    }
    // The default user takes any password when none is configured.
    if (args[1] == "default") return SimpleStringReply("OK");
  } else if ((!has_user || args[1] == "default") &&
             SecretEquals(args[has_user ? 2 : 1], env.password)) {
    state.authenticated = true;
    return SimpleStringReply("OK");
  }
  return ErrorReply("WRONGPASS invalid username-password pair or user is disabled.");
}

std::string Client(absl::Span<const std::string> args, ConnectionState& state) {
  const std::string sub = absl::AsciiStrToLower(args[1]);
  std::string reply;
  RespWriter w(&reply);
  if (sub == "setname") {
    if (args.size() != 3) return ErrorReply(ArityMessage("client|setname"));
    for (char c : args[2]) {
      if (c < '!' || c > '~') {
        return ErrorReply(
            "ERR Client names cannot contain spaces, newlines or special characters.");
      }
    }
    state.name = args[2];
    w.SimpleString("OK");
  } else if (sub == "getname") {
    if (args.size() != 2) return ErrorReply(ArityMessage("client|getname"));
    if (state.name.empty()) {
      w.NullBulk();
    } else {
      w.Bulk(state.name);
    }
  } else if (sub == "id") {
    if (args.size() != 2) return ErrorReply(ArityMessage("client|id"));
    w.Integer(static_cast<int64_t>(state.id));
  } else {
    return ErrorReply(UnknownSubcommandMessage(args[1], "client"));
  }
  return reply;
}

std::string Config(absl::Span<const std::string> args, const LocalEnv& env) {
  const std::string sub = absl::AsciiStrToLower(args[1]);
  if (sub == "set" || sub == "resetstat" || sub == "rewrite") {
    return ErrorReply(absl::StrCat("ERR CONFIG ", absl::AsciiStrToUpper(sub), " is not supported"));
  }
  if (sub != "get") return ErrorReply(UnknownSubcommandMessage(args[1], "config"));
  if (args.size() < 3) return ErrorReply(ArityMessage("config|get"));
  const std::pair<absl::string_view, std::string> params[] = {
      {"save", ""},
      {"appendonly", "no"},
      {"databases", "1"},
      {"maxclients", absl::StrCat(env.max_clients)},
      {"port", absl::StrCat(env.port)},
      {"proto-max-bulk-len", absl::StrCat(env.max_bulk_bytes)},
  };
  std::vector<const std::pair<absl::string_view, std::string>*> matched;
  for (const auto& param : params) {
    const std::string name(param.first);
    for (size_t i = 2; i < args.size(); ++i) {
      // A pattern with a NUL byte cannot match (fnmatch reads a C string).
      if (args[i].find('\0') != std::string::npos) continue;
      if (fnmatch(args[i].c_str(), name.c_str(), FNM_CASEFOLD) == 0) {
        matched.push_back(&param);
        break;
      }
    }
  }
  std::string reply;
  RespWriter w(&reply);
  w.ArrayHeader(matched.size() * 2);
  for (const auto* param : matched) {
    w.Bulk(param->first);
    w.Bulk(param->second);
  }
  return reply;
}

}  // namespace

bool IsLocalCommand(CommandId id) {
  switch (id) {
    case CommandId::kPing:
    case CommandId::kEcho:
    case CommandId::kSelect:
    case CommandId::kAuth:
    case CommandId::kClient:
    case CommandId::kConfig:
    case CommandId::kCommand:
      return true;
    default:
      return false;
  }
}

std::string RunLocalCommand(const CommandSpec& spec, absl::Span<const std::string> args,
                            const LocalEnv& env, ConnectionState& state) {
  std::string reply;
  RespWriter w(&reply);
  switch (spec.id) {
    case CommandId::kPing:
      if (args.size() > 2) return ErrorReply(ArityMessage("ping"));
      if (args.size() == 2) {
        w.Bulk(args[1]);
      } else {
        w.SimpleString("PONG");
      }
      return reply;
    case CommandId::kEcho:
      w.Bulk(args[1]);
      return reply;
    case CommandId::kSelect: {
      int64_t db = 0;
      if (!ParseStrictInt64(args[1], &db)) return NotAnIntegerReply();
      if (db != 0) return ErrorReply("ERR DB index is out of range");
      return SimpleStringReply("OK");
    }
    case CommandId::kAuth:
      return Auth(args, env, state);
    case CommandId::kClient:
      return Client(args, state);
    case CommandId::kConfig:
      return Config(args, env);
    case CommandId::kCommand:
      return CommandCommandReply(args);
    default:
      return ErrorReply(absl::StrCat("ERR '", spec.name, "' is not a local command"));
  }
}

}  // namespace farm::kv::resp
