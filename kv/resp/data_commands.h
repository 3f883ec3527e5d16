// The data commands — GET SET DEL EXISTS MGET MSET INCR DECR INCRBY DECRBY — written
// once against KeyOps, so they run the same on the Store directly and inside EXEC's
// transaction.
//
// Mapping onto the Store (outside a transaction):
//   GET -> Get;  EXISTS, MGET -> MultiGet;  INCR.. -> Increment;  SET -> Put;
//   SET NX/XX/GET -> Get + Put in one StoreTxn;  DEL k -> Remove;  DEL k1 k2.. and
//   MSET k1 v1 k2 v2.. -> Removes / Puts in one StoreTxn (atomic, as in Redis).
// A command's own transaction is retried on Aborted (DataEnv::max_txn_attempts).
// Inside a transaction every operation goes to it, in order.
//
// Keys and values over the store's limits are refused before anything is stored.
#ifndef FARM_KV_RESP_DATA_COMMANDS_H_
#define FARM_KV_RESP_DATA_COMMANDS_H_

#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"
#include "kv/store.h"

namespace farm::kv::resp {

// Receives one encoded reply.
using ReplyDone = absl::AnyInvocable<void(std::string reply)>;

struct DataEnv {
  Store* store = nullptr;  // for the transactions of atomic multi-key commands
  StoreLimits limits;
  int max_txn_attempts = 100;
};

bool IsDataCommand(CommandId id);

// Runs data command call->spec->id on `ops`. `done` gets the reply exactly once:
// inside this call for argument errors, later for anything that reached the store.
void RunDataCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_DATA_COMMANDS_H_
