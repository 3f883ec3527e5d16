// SCAN, KEYS, FLUSHALL and FLUSHDB: the keyspace, through Store::ScanKeys (kv/store.h),
// whose contract is Redis SCAN's: a key present throughout a whole scan is in one of its
// pages (here in exactly one), one added or removed meanwhile may or may not be.
//
//   SCAN cursor [MATCH pattern] [COUNT n] [TYPE t]
//       One page: *2 of the next cursor (a bulk string; "0" ends the scan) and the
//       page's keys. MATCH filters by Redis's glob (glob_match.h); TYPE (string or hash,
//       any case; another name matches nothing) reads the page's matching keys with one
//       MultiGet, leaving out those gone meanwhile. COUNT (default 10) is about how many
//       keys a page holds. Errors as Redis 7.0: "ERR invalid cursor", "ERR value is not
//       an integer or out of range" (COUNT), "ERR syntax error" (COUNT < 1, an unknown
//       or incomplete option).
//   KEYS pattern
//       Every page's matching keys, in one array (not a snapshot, as SCAN).
//   FLUSHALL [ASYNC|SYNC], FLUSHDB [ASYNC|SYNC]
//       Removes each page's keys, a page's removes issued together, page after page;
//       +OK once the last page's are done (both modes wait). Not one atomic step, as
//       Redis's is: a key another client writes while a flush runs may survive it.
//       The first store error ends it (the keys removed so far stay removed).
//
// The session runs them exclusively (nothing of the connection overlaps them), and
// refuses them in MULTI: a flush is not one atomic step, and a scan inside EXEC would
// not see the transaction's own writes, as Redis's does. Callbacks
// hold only what they own: a connection may close while one runs (a flush then goes
// on to its end). Store calls on the store's worker thread, as kv/store.h requires.
#ifndef FARM_KV_RESP_KEYSPACE_COMMANDS_H_
#define FARM_KV_RESP_KEYSPACE_COMMANDS_H_

#include <string>

#include "absl/types/span.h"
#include "kv/resp/data_env.h"
#include "kv/resp/resp_commands.h"
#include "kv/store.h"

namespace farm::kv::resp {

// `args` is the whole command, name included; read during the call only. `done` runs
// once: inside the call for an argument error, later otherwise.
bool IsKeyspaceCommand(CommandId id);
void RunScan(Store* store, absl::Span<const std::string> args, ReplyDone done);
void RunKeys(Store* store, absl::Span<const std::string> args, ReplyDone done);
void RunFlush(Store* store, absl::Span<const std::string> args, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_KEYSPACE_COMMANDS_H_
