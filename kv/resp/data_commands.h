// The string and key commands — GET SET DEL EXISTS MGET MSET INCR DECR INCRBY DECRBY
// TYPE, and for keys that never expire TTL PTTL EXPIRETIME PEXPIRETIME PERSIST GETEX —
// written once against KeyOps, so they run the same on the Store directly and inside
// EXEC's transaction. Values go through the typed-value codec (typed_value.h).
//
// Mapping onto the Store (outside a transaction):
//   GET, GETEX, TYPE, TTL.., PERSIST -> Get;  EXISTS, MGET -> MultiGet;
//   INCR.. -> Increment;  SET (KEEPTTL or not) -> Put;
//   SET NX/XX/GET -> Get + Put in one StoreTxn;  DEL k -> Remove;  DEL k1 k2.. and
//   MSET k1 v1 k2 v2.. -> Removes / Puts in one StoreTxn (atomic, as in Redis).
// A command's own transaction is retried on Aborted (DataEnv::max_txn_attempts). Outside
// a transaction SET's Put and read-modify-write, and the hash writes, go through
// DataEnv::combiner (PutOnKey, RunAtomicallyOnKey).
// Inside a transaction every operation goes to it, in order.
//
// Types, as in Redis: GET, SET GET and INCR.. of a hash answer WRONGTYPE; MGET answers
// nil for it; SET and MSET overwrite any type; DEL, EXISTS count every key. A string
// that begins with 0xFF is stored escaped and read back as it was.
//
// Keys and values over the store's limits are refused, before anything is stored, by
// the commands that may create a key; the others answer for a key over the limit as
// for a missing one (store_replies.h OverKeyLimit).
//
// The hash commands (hash_commands.h) and the other string commands (string_commands.h)
// are data commands too: RunDataCommand hands them on, so the session and EXEC treat
// every command on keys alike.
#ifndef FARM_KV_RESP_DATA_COMMANDS_H_
#define FARM_KV_RESP_DATA_COMMANDS_H_

#include <memory>

#include "kv/resp/data_env.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"

namespace farm::kv::resp {

bool IsDataCommand(CommandId id);

// Commands whose write outside a transaction goes through DataEnv::combiner (SET, SETNX,
// GETSET, GETDEL, APPEND, SETRANGE, INCRBYFLOAT, HSET, HMSET, HSETNX, HDEL, HINCRBY,
// HINCRBYFLOAT: writes of one key, a Put or a read-modify-write), which applies a
// thread's writes of a key in the order submitted.
bool WritesThroughCombiner(CommandId id);

// Runs data command call->spec->id on `ops`. `done` gets the reply exactly once:
// inside this call for argument errors, later for anything that reached the store.
void RunDataCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                    std::shared_ptr<KeyOps> ops, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_DATA_COMMANDS_H_
