#include "kv/resp/info_command.h"

#include <unistd.h>

#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "kv/resp/resp_names.h"
#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

enum Section : unsigned {
  kServer = 1u << 0,
  kClients = 1u << 1,
  kStats = 1u << 2,
  kKeyspace = 1u << 3,
  kFarm = 1u << 4,
  kMemory = 1u << 5,
  kAll = kServer | kClients | kStats | kMemory | kKeyspace | kFarm,
  kNeedsStats = kMemory | kKeyspace | kFarm,  // sections that scan the store
};

unsigned SelectedSections(absl::Span<const std::string> args) {
  if (args.size() <= 1) return kAll;
  unsigned selected = 0;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string name = absl::AsciiStrToLower(args[i]);
    if (name == "default" || name == "all" || name == "everything") selected |= kAll;
    if (name == "server") selected |= kServer;
    if (name == "clients") selected |= kClients;
    if (name == "stats") selected |= kStats;
    if (name == "keyspace") selected |= kKeyspace;
    if (name == "farm") selected |= kFarm;
    if (name == "memory") selected |= kMemory;
  }
  return selected;
}

std::string FormatInfo(unsigned sections, const InfoEnv& env, const RespStats& counters,
                       const StoreStats* stats) {
  std::string text;
  auto begin_section = [&text](absl::string_view title) {
    if (!text.empty()) text.append("\r\n");
    absl::StrAppend(&text, "# ", title, "\r\n");
  };
  if (sections & kServer) {
    begin_section("Server");
    absl::StrAppend(&text, "redis_version:7.0.0\r\n", "redis_mode:standalone\r\n",
                    "server_name:farm-resp\r\n", "os:Linux\r\n", "arch_bits:64\r\n",
                    "multiplexing_api:epoll\r\n", "process_id:", ::getpid(), "\r\n",
                    "tcp_port:", env.port, "\r\n");
  }
  if (sections & kClients) {
    begin_section("Clients");
    absl::StrAppend(&text, "connected_clients:", counters.connections_open, "\r\n",
                    "maxclients:", env.max_clients, "\r\n");
  }
  if (sections & kStats) {
    begin_section("Stats");
    absl::StrAppend(&text, "total_connections_received:", counters.connections_accepted, "\r\n",
                    "total_commands_processed:", counters.commands, "\r\n",
                    "rejected_connections:", counters.connections_rejected, "\r\n",
                    "total_error_replies:", counters.error_replies, "\r\n",
                    "protocol_errors:", counters.protocol_errors, "\r\n");
  }
  if ((sections & kMemory) && stats != nullptr) {
    // Redis's field, as clients and tools read it: the store's memory in the cluster.
    begin_section("Memory");
    absl::StrAppend(&text, "used_memory:", stats->memory_bytes, "\r\n");
  }
  if ((sections & kKeyspace) && stats != nullptr) {
    begin_section("Keyspace");
    if (stats->keys > 0)
      absl::StrAppend(&text, "db0:keys=", stats->keys, ",expires=0,avg_ttl=0\r\n");
  }
  if ((sections & kFarm) && stats != nullptr) {
    begin_section("Farm");
    const double occupancy =
        stats->slots == 0 ? 0.0
                          : static_cast<double>(stats->keys) / static_cast<double>(stats->slots);
    absl::StrAppend(&text, "keys:", stats->keys, "\r\n", "pair_bytes:", stats->pair_bytes, "\r\n",
                    "memory_bytes:", stats->memory_bytes, "\r\n", "slots:", stats->slots, "\r\n",
                    "overflow_blocks:", stats->overflow_blocks, "\r\n",
                    absl::StrFormat("slot_occupancy:%.4f\r\n", occupancy));
  }
  std::string reply;
  RespWriter(&reply).Bulk(text);
  return reply;
}

}  // namespace

void RunDbSize(Store* store, ReplyDone done) {
  store->Stats([done = std::move(done)](absl::StatusOr<StoreStats> stats) mutable {
    if (!stats.ok()) return done(StoreErrorReply(stats.status()));
    std::string reply;
    RespWriter(&reply).Integer(static_cast<int64_t>(stats->keys));
    done(std::move(reply));
  });
}

void RunInfo(Store* store, const InfoEnv& env, absl::Span<const std::string> args, ReplyDone done) {
  const unsigned sections = SelectedSections(args);
  // Counters are read now: the callback may run after the service is gone.
  const RespStats counters = env.counters ? env.counters->Snapshot() : RespStats{};
  if ((sections & kNeedsStats) == 0) {
    return done(FormatInfo(sections, env, counters, nullptr));
  }
  store->Stats(
      [sections, env, counters, done = std::move(done)](absl::StatusOr<StoreStats> stats) mutable {
        if (!stats.ok()) return done(StoreErrorReply(stats.status()));
        done(FormatInfo(sections, env, counters, &*stats));
      });
}

}  // namespace farm::kv::resp
