// SyncKvClient: one blocking connection to a key-value server, as the synchronous
// baseline runner (sync_runner.h) drives it: one client per thread, one request at a
// time. Implementations: memcached_backend.h, redis_backend.h.
//
// Keys and values are byte strings. A client is used by one thread at a time; it may
// be created on one thread and used on another.
#ifndef FARM_TOOLS_YCSB_SYNC_KV_CLIENT_H_
#define FARM_TOOLS_YCSB_SYNC_KV_CLIENT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/ycsb/op_generator.h"

namespace farm::ycsb {

// What a server says about itself, for the report's figures.
struct ServerStats {
  uint64_t items = 0;         // key-value pairs stored
  uint64_t memory_bytes = 0;  // memory for them, as the server counts it (see the client)
};

class SyncKvClient {
 public:
  virtual ~SyncKvClient() = default;

  // Errors, for every call: Unavailable when the connection failed or timed out;
  // Internal for an unexpected or error reply.

  // OK with the value in *value (its capacity is reused); NotFound when there is none.
  virtual absl::Status Get(absl::string_view key, std::string* value) = 0;
  // Stores a new pair; AlreadyExists when the key has a value (nothing changes).
  virtual absl::Status Insert(absl::string_view key, absl::string_view value) = 0;
  // Stores the pair, replacing any value.
  virtual absl::Status Update(absl::string_view key, absl::string_view value) = 0;
  // Looks up all keys of `keys` in one request and calls found(i, value) for each key
  // i that has a value, in increasing i; the value is valid during the call. Returns
  // how many were found.
  virtual absl::StatusOr<size_t> MultiGet(
      const KeyBatch& keys, absl::FunctionRef<void(size_t, absl::string_view)> found) = 0;
  virtual absl::StatusOr<ServerStats> Stats() = 0;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_SYNC_KV_CLIENT_H_
