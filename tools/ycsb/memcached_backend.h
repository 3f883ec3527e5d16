// The memcached baseline: SyncKvClient over libmemcached, one connection per client.
//   Get      -> get (memcached_mget of one key + memcached_fetch_result into a reused
//               result, so no allocation per read)
//   Insert   -> add         Update -> set         MultiGet -> get k1 k2 ... (mget)
//   Stats    -> stats: curr_items and bytes (item memory: headers, keys and values;
//               slab-class rounding and unused slab pages are not in it)
// TCP_NODELAY on. The ASCII protocol is the default: on loopback with small values it
// measured faster than the binary protocol (see README.md), and memcached 1.6
// deprecates the binary one.
#ifndef FARM_TOOLS_YCSB_MEMCACHED_BACKEND_H_
#define FARM_TOOLS_YCSB_MEMCACHED_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tools/ycsb/sync_kv_client.h"

namespace farm::ycsb {

struct MemcachedClientOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  bool binary_protocol = false;
  absl::Duration timeout = absl::Seconds(5);  // connect, and each request
};

// Connects and checks the server answers (a version request). Unavailable otherwise.
absl::StatusOr<std::unique_ptr<SyncKvClient>> ConnectMemcached(
    const MemcachedClientOptions& options);

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_MEMCACHED_BACKEND_H_
