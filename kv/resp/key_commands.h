// RENAME, RENAMENX and COPY with Redis 7.0's semantics and error texts, written against
// KeyOps like the other data commands (data_commands.h), so they run the same on the
// Store and inside EXEC.
//
// Each is one transaction over its two keys (retried on conflicts; inside EXEC, EXEC's):
// the source's Get, the destination's Get when it matters (RENAMENX, COPY), the
// destination's Put of the source's stored bytes (any type, as stored), and RENAME's
// Remove of the source. No key has a time to live here, so none moves with the value.
//
//   RENAME src dst        +OK; "ERR no such key" for a missing source; src == dst: +OK
//   RENAMENX src dst      :1 renamed, :0 when dst exists (or src == dst); no such key
//   COPY src dst [DB 0] [REPLACE]
//                         :1 copied, :0 when src is missing or dst exists (without
//                         REPLACE); "ERR source and destination objects are the same";
//                         DB other than 0: "ERR DB index is out of range" (one database)
//
// A source over the store's key limit is a missing key; a destination over it is refused
// ("ERR key is too large") once the source is found (Redis checks the source first).
#ifndef FARM_KV_RESP_KEY_COMMANDS_H_
#define FARM_KV_RESP_KEY_COMMANDS_H_

#include <memory>

#include "kv/resp/data_env.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"

namespace farm::kv::resp {

bool IsKeyCommand(CommandId id);

// Runs call->spec->id on `ops`; done gets the reply exactly once (inside the call for
// argument errors).
void RunKeyCommand(const DataEnv& env, std::shared_ptr<const Call> call,
                   std::shared_ptr<KeyOps> ops, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_KEY_COMMANDS_H_
