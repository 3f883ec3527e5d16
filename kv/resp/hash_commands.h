// The hash commands — HSET HMSET HSETNX HGET HMGET HGETALL HKEYS HVALS HDEL HLEN HEXISTS
// HSTRLEN HINCRBY HINCRBYFLOAT HSCAN — with Redis 7's semantics and error texts, written
// against KeyOps like the other data commands (data_commands.h), so they run the same on
// the Store and inside EXEC.
//
// A hash is one stored value (typed_value.h). Mapping onto the Store:
//   HGET HMGET HGETALL HKEYS HVALS HLEN HEXISTS HSTRLEN HSCAN -> one Get (a lock-free
//   lookup), decoded (HSCAN: every matching field in one page, cursor 0);
//   HSET HMSET HSETNX HDEL HINCRBY -> Get + Put (or Remove, when HDEL takes the last field) in
//   one StoreTxn, retried on Aborted, through DataEnv::combiner (combined with the
//   thread's other writes of the key); inside EXEC, in EXEC's transaction.
// A key holding a string answers WRONGTYPE; a missing key is an empty hash (HDEL of the
// last field deletes the key; a key over the store's key limit is a missing key to the
// reads and HDEL, and refused by the writes). A hash whose encoding would exceed the store's value
// limit is refused ("-ERR value is too large (...)") and nothing is stored. A corrupt
// encoding answers an error naming it; nothing is read past its end.
#ifndef FARM_KV_RESP_HASH_COMMANDS_H_
#define FARM_KV_RESP_HASH_COMMANDS_H_

#include <memory>

#include "kv/resp/data_env.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"

namespace farm::kv::resp {

bool IsHashCommand(CommandId id);

// Runs hash command call->spec->id on `ops`; done gets the reply exactly once (inside
// the call for argument errors).
void RunHashCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_HASH_COMMANDS_H_
