#include "tools/ycsb/memcached_backend.h"

#include <libmemcached/memcached.h>

#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::ycsb {
namespace {

class MemcachedClient final : public SyncKvClient {
 public:
  explicit MemcachedClient(memcached_st* mc) : mc_(mc) { memcached_result_create(mc_, &result_); }
  ~MemcachedClient() override {
    memcached_result_free(&result_);
    memcached_free(mc_);
  }
  MemcachedClient(const MemcachedClient&) = delete;
  MemcachedClient& operator=(const MemcachedClient&) = delete;

  absl::Status Get(absl::string_view key, std::string* value) override {
    const char* k = key.data();
    const size_t len = key.size();
    memcached_return_t rc = memcached_mget(mc_, &k, &len, 1);
    if (!memcached_success(rc)) return Error("get", rc);
    bool found = false;
    while (memcached_fetch_result(mc_, &result_, &rc) != nullptr) {
      value->assign(memcached_result_value(&result_), memcached_result_length(&result_));
      found = true;
    }
    if (!Ended(rc)) return Error("get", rc);
    return found ? absl::OkStatus() : absl::NotFoundError(key);
  }

  absl::Status Insert(absl::string_view key, absl::string_view value) override {
    const memcached_return_t rc =
        memcached_add(mc_, key.data(), key.size(), value.data(), value.size(), 0, 0);
    if (rc == MEMCACHED_NOTSTORED || rc == MEMCACHED_DATA_EXISTS) {
      return absl::AlreadyExistsError(key);
    }
    return memcached_success(rc) ? absl::OkStatus() : Error("add", rc);
  }

  absl::Status Update(absl::string_view key, absl::string_view value) override {
    const memcached_return_t rc =
        memcached_set(mc_, key.data(), key.size(), value.data(), value.size(), 0, 0);
    return memcached_success(rc) ? absl::OkStatus() : Error("set", rc);
  }

  absl::StatusOr<size_t> MultiGet(
      const KeyBatch& keys, absl::FunctionRef<void(size_t, absl::string_view)> found) override {
    if (keys.size() == 0) return 0;
    memcached_return_t rc = memcached_mget(mc_, keys.pointers(), keys.lengths(), keys.size());
    if (!memcached_success(rc)) return Error("mget", rc);
    // One server answers in request order, skipping missing keys: match by walking on.
    size_t next = 0;
    size_t count = 0;
    absl::Status mismatch;
    while (memcached_fetch_result(mc_, &result_, &rc) != nullptr) {
      const absl::string_view key(memcached_result_key_value(&result_),
                                  memcached_result_key_length(&result_));
      while (next < keys.size() && keys.key(next) != key) ++next;
      if (next == keys.size()) {
        if (mismatch.ok())
          mismatch = absl::InternalError(absl::StrCat("mget: unexpected key ", key));
        continue;  // drain the reply
      }
      found(next++,
            absl::string_view(memcached_result_value(&result_), memcached_result_length(&result_)));
      ++count;
    }
    if (!Ended(rc)) return Error("mget", rc);
    if (!mismatch.ok()) return mismatch;
    return count;
  }

  absl::StatusOr<ServerStats> Stats() override {
    memcached_return_t rc;
    memcached_stat_st* stats = memcached_stat(mc_, nullptr, &rc);
    if (stats == nullptr || !memcached_success(rc)) {
      if (stats != nullptr) memcached_stat_free(nullptr, stats);
      return Error("stats", rc);
    }
    ServerStats s{stats[0].curr_items, stats[0].bytes};
    memcached_stat_free(nullptr, stats);
    return s;
  }

 private:
  // The end of a reply's values.
  static bool Ended(memcached_return_t rc) {
    return rc == MEMCACHED_END || rc == MEMCACHED_NOTFOUND || rc == MEMCACHED_SUCCESS;
  }

  absl::Status Error(absl::string_view what, memcached_return_t rc) const {
    const std::string message =
        absl::StrCat("memcached ", what, ": ", memcached_last_error_message(mc_));
    switch (rc) {
      case MEMCACHED_CONNECTION_FAILURE:
      case MEMCACHED_SERVER_MARKED_DEAD:
      case MEMCACHED_SERVER_TEMPORARILY_DISABLED:
      case MEMCACHED_TIMEOUT:
      case MEMCACHED_ERRNO:
      case MEMCACHED_WRITE_FAILURE:
      case MEMCACHED_READ_FAILURE:
      case MEMCACHED_UNKNOWN_READ_FAILURE:
      case MEMCACHED_CONNECTION_SOCKET_CREATE_FAILURE:
      case MEMCACHED_HOST_LOOKUP_FAILURE:
        return absl::UnavailableError(message);
      default:
        return absl::InternalError(message);
    }
  }

  memcached_st* mc_;
  memcached_result_st result_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<SyncKvClient>> ConnectMemcached(
    const MemcachedClientOptions& options) {
  memcached_st* mc = memcached_create(nullptr);
  if (mc == nullptr) return absl::ResourceExhaustedError("memcached_create failed");
  auto client = std::make_unique<MemcachedClient>(mc);  // owns mc from here on
  const auto timeout_ms = static_cast<uint64_t>(absl::ToInt64Milliseconds(options.timeout));
  const std::pair<memcached_behavior_t, uint64_t> behaviors[] = {
      {MEMCACHED_BEHAVIOR_BINARY_PROTOCOL, options.binary_protocol ? 1 : 0},
      {MEMCACHED_BEHAVIOR_TCP_NODELAY, 1},
      {MEMCACHED_BEHAVIOR_CONNECT_TIMEOUT, timeout_ms},
      {MEMCACHED_BEHAVIOR_POLL_TIMEOUT, timeout_ms},
  };
  for (const auto& [behavior, value] : behaviors) {
    if (!memcached_success(memcached_behavior_set(mc, behavior, value))) {
      return absl::InternalError(absl::StrCat("memcached_behavior_set ", behavior, ": ",
                                              memcached_last_error_message(mc)));
    }
  }
  if (!memcached_success(memcached_server_add(mc, options.host.c_str(), options.port))) {
    return absl::InvalidArgumentError(absl::StrCat("memcached_server_add ", options.host, ":",
                                                   options.port, ": ",
                                                   memcached_last_error_message(mc)));
  }
  if (!memcached_success(memcached_version(mc))) {
    return absl::UnavailableError(
        absl::StrCat("memcached at ", options.host, ":", options.port,
                     " does not answer: ", memcached_last_error_message(mc)));
  }
  return client;
}

}  // namespace farm::ycsb
