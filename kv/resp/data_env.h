// What the data commands (data_commands.h: strings and keys; hash_commands.h: hashes)
// share: their environment, how they hand back a reply, and RunAtomically, which makes
// several store operations one atomic step.
//
// Thread and lifetime rules are KeyOps's (key_ops.h).
#ifndef FARM_KV_RESP_DATA_ENV_H_
#define FARM_KV_RESP_DATA_ENV_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "kv/resp/key_ops.h"
#include "kv/store.h"

namespace farm::kv::resp {

// Receives one encoded reply.
using ReplyDone = absl::AnyInvocable<void(std::string reply)>;

struct DataEnv {
  Store* store = nullptr;  // for the transactions of commands that must be atomic
  StoreLimits limits;
  int max_txn_attempts = 100;
};

// An encoded reply, or an error for StoreErrorReply.
using CommandResult = absl::StatusOr<std::string>;
// Operations on `ops` ending in done(reply) or done(error).
using CommandBody = std::function<void(std::shared_ptr<KeyOps> ops, Done<CommandResult> done)>;

// Runs `body` so that its operations are atomic together: on `ops` when that is a
// transaction already or when the body does a single operation (needs_txn false), else
// in a transaction of its own, retried on conflicts (env.max_txn_attempts). done gets
// the reply, or the error as a reply (nothing written).
void RunAtomically(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, bool needs_txn,
                   CommandBody body, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_DATA_ENV_H_
