// DBSIZE and INFO: figures from Store::Stats (a scan of the whole store) and from the
// service's counters.
//
// INFO [section ...] writes Redis-style text ("# Server\r\nredis_version:7.0.0\r\n...",
// sections separated by an empty line) as one bulk string. Sections, in this order:
// server, clients, stats, keyspace ("db0:keys=N,expires=0,avg_ttl=0", as Redis), farm
// (keys, pair_bytes, memory_bytes, slots, overflow_blocks, slot_occupancy). No argument,
// "default", "all" or "everything" select all; unknown names select nothing. Store::Stats
// is called only when keyspace or farm is selected.
#ifndef FARM_KV_RESP_INFO_COMMAND_H_
#define FARM_KV_RESP_INFO_COMMAND_H_

#include <cstdint>
#include <string>

#include "absl/types/span.h"
#include "kv/resp/data_commands.h"
#include "kv/resp/resp_names.h"
#include "kv/store.h"

namespace farm::kv::resp {

struct InfoEnv {
  const RespCounters* counters = nullptr;  // null: zeros
  uint16_t port = 0;
  uint64_t max_clients = 0;
};

// ":<keys>" from Store::Stats.
void RunDbSize(Store* store, ReplyDone done);
// `args` is the whole command (INFO and its section names); read during the call only.
void RunInfo(Store* store, const InfoEnv& env, absl::Span<const std::string> args, ReplyDone done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_INFO_COMMAND_H_
