#include "tools/ycsb/baseline_backends.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

#include "tools/common/memcached_server.h"
#include "tools/common/redis_server.h"
#include "tools/ycsb/memcached_backend.h"
#include "tools/ycsb/redis_backend.h"
#include "tools/ycsb/sync_runner.h"

namespace farm::ycsb {
namespace {

// memcached's per-item overhead: a 48-56 byte header, the key, the value, "\r\n", and
// up to 25% lost to slab-class rounding.
constexpr double kItemOverheadBytes = 64;
constexpr double kSlabRounding = 1.25;
constexpr int kMinMemcachedMb = 64;

// Records loaded plus, for a run bounded by time, a generous guess at what its inserts
// add (memcached runs with -M: a full cache fails stores rather than evicting).
int MemcachedMemoryMb(const RunConfig& config) {
  const WorkloadSpec& w = config.workload;
  const double item =
      (kItemOverheadBytes + std::max<size_t>(w.key_size, 24) + w.value_size()) * kSlabRounding;
  const double inserts =
      w.operation_count > 0
          ? w.operation_count * w.insert_proportion
          : w.insert_proportion * 500'000 * absl::ToDoubleSeconds(config.duration + config.warmup);
  const double mb = 2 * item * (static_cast<double>(w.record_count) + inserts) / (1 << 20);
  return std::max(kMinMemcachedMb, static_cast<int>(mb) + 16);
}

}  // namespace

absl::StatusOr<RunReport> RunMemcached(const RunConfig& config, const BaselineOptions& options) {
  bench::MemcachedServerOptions server_options;
  server_options.threads = config.server_threads;
  server_options.memory_mb = MemcachedMemoryMb(config);
  server_options.max_connections = std::max(1024, config.threads + 64);
  absl::StatusOr<std::unique_ptr<bench::MemcachedServer>> server =
      bench::MemcachedServer::Start(server_options);
  if (!server.ok()) return server.status();
  MemcachedClientOptions client_options;
  client_options.port = (*server)->port();
  client_options.binary_protocol = options.memcached_binary_protocol;
  absl::StatusOr<RunReport> report =
      RunSyncWorkload(config, "memcached", [&] { return ConnectMemcached(client_options); });
  if (report.ok()) report->AddFigure("memcached_binary", options.memcached_binary_protocol ? 1 : 0);
  return report;
}

absl::StatusOr<RunReport> RunRedis(const RunConfig& config) {
  absl::StatusOr<std::unique_ptr<bench::RedisServer>> server = bench::RedisServer::Start();
  if (!server.ok()) return server.status();
  RedisClientOptions client_options;
  client_options.port = (*server)->port();
  return RunSyncWorkload(config, "redis", [&] { return ConnectRedis(client_options); });
}

absl::StatusOr<RunReport> RunRespCluster(const RunConfig& config, const std::vector<std::string>& addresses) {
  if (addresses.empty()) {
    return absl::InvalidArgumentError("the resp backend needs --resp_addresses (host:port of every node)");
  }
  std::vector<RedisClientOptions> nodes;
  for (const std::string& address : addresses) {
    const size_t colon = address.rfind(':');
    uint32_t port = 0;
    if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port == 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat("--resp_addresses: '", address, "' is not host:port"));
    }
    RedisClientOptions o;
    o.host = address.substr(0, colon);
    o.port = static_cast<uint16_t>(port);
    nodes.push_back(o);
  }
  size_t next = 0;  // client threads go to the nodes round-robin
  return RunSyncWorkload(config, "resp", [&] { return ConnectRedis(nodes[next++ % nodes.size()]); });
}

absl::Status RegisterBaselineBackends(BackendRegistry* registry, const BaselineOptions& options) {
  if (absl::Status s = registry->Register(
          "memcached", "a private memcached (-t --server_threads), libmemcached clients",
          [options](const RunConfig& config) { return RunMemcached(config, options); });
      !s.ok()) {
    return s;
  }
  if (absl::Status s = registry->Register("redis", "a private redis-server, hiredis clients", RunRedis); !s.ok()) {
    return s;
  }
  return registry->Register(
      "resp", "a running RESP cluster (farm_node --services=kv): client thread t uses --resp_addresses[t % n]",
      [addresses = options.resp_addresses](const RunConfig& config) { return RunRespCluster(config, addresses); });
}

}  // namespace farm::ycsb
