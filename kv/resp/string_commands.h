// The string commands beyond GET/SET/MGET/MSET/INCR.. (data_commands.h) — SETNX GETSET
// GETDEL APPEND STRLEN MSETNX GETRANGE SUBSTR SETRANGE INCRBYFLOAT — with Redis 7's
// semantics and error texts, written against KeyOps like the other data commands, so
// they run the same on the Store and inside EXEC.
//
// Mapping onto the Store:
//   STRLEN GETRANGE SUBSTR -> one Get (a lock-free lookup);
//   SETNX GETSET GETDEL APPEND SETRANGE INCRBYFLOAT -> a read-modify-write of the key in
//   one StoreTxn, through DataEnv::combiner (combined with the thread's other writes of
//   the key);
//   MSETNX -> the keys' Gets, then their Puts when none exists, in one StoreTxn.
// Inside EXEC every operation goes to EXEC's transaction.
//
// Types, as in Redis: GETSET, GETDEL, APPEND, STRLEN, GETRANGE, SETRANGE and INCRBYFLOAT
// of a hash answer WRONGTYPE (and change nothing); SETNX and MSETNX count a key of any
// type as existing. Integer arguments are checked before the key is read (GETRANGE's
// indexes, SETRANGE's offset), as Redis does. A key over the store's key limit is a
// missing key to STRLEN, GETDEL, GETRANGE and SETRANGE with an empty value, and refused
// by the others (they may create it); an APPEND or SETRANGE whose result is over the
// value limit is refused and changes nothing.
#ifndef FARM_KV_RESP_STRING_COMMANDS_H_
#define FARM_KV_RESP_STRING_COMMANDS_H_

#include <memory>

#include "kv/resp/data_env.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"

namespace farm::kv::resp {

bool IsStringCommand(CommandId id);

// Runs string command call->spec->id on `ops`; done gets the reply exactly once (inside
// the call for argument errors).
void RunStringCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                      std::shared_ptr<KeyOps> ops, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_STRING_COMMANDS_H_
