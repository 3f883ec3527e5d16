// ZkClient: a ZooKeeper session through the multithreaded C client, with errors as
// absl::Status and watches delivered as events.
//
// Contract:
//   - Connect returns only once the session is established, or fails within
//     `connect_timeout` with Unavailable naming the ensemble (ZooKeeper down, wrong
//     address): never a hang.
//   - Calls are synchronous and may run on any thread except the event callback's
//     (the C client's completion thread; a synchronous call from there deadlocks).
//     Hand events to another thread.
//   - Watches are the C client's one-shot watches, all delivered to the one callback
//     as ZkEvent{type, state, path}; after the destructor returns no callback runs.
//   - Session states: kConnected, kConnecting (connection lost, session may live),
//     kExpired (ephemeral nodes gone; this client is dead: make a new one).
//   - Heartbeats (Options::heartbeat_interval > 0): the client's own thread sends a
//     cheap read that often, up to kMaxHeartbeatsInFlight unanswered, and calls
//     `on_heartbeat(sent_ns, session_timeout_ns)` for each one the server answers:
//     `sent_ns` is the lease clock's reading (membership/lease_clock.h) taken *before*
//     it was sent, `session_timeout_ns` the timeout the server granted. The server
//     touched the session after `sent_ns`, so it cannot expire the session before
//     sent_ns + session_timeout_ns: a lease timed from `sent_ns` never outlives the
//     session, however late the answer or its callback (on the C client's completion
//     thread) runs. Heartbeats start once the session is up and stop in the destructor,
//     before the session closes.
#ifndef FARM_MEMBERSHIP_ZK_CLIENT_H_
#define FARM_MEMBERSHIP_ZK_CLIENT_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/base/mutex.h"

typedef struct _zhandle zhandle_t;
struct Stat;

namespace farm::membership {

enum class ZkSessionState { kConnecting, kConnected, kExpired, kAuthFailed, kClosed };
const char* ZkSessionStateName(ZkSessionState state);

struct ZkEvent {
  enum class Type { kSession, kCreated, kDeleted, kChanged, kChildren, kNotWatching };
  Type type;
  ZkSessionState state;
  std::string path;  // empty for session events
};

struct ZkNodeData {
  std::string data;
  int32_t version = 0;
};

enum class ZkNodeMode { kPersistent, kEphemeral, kEphemeralSequential };

// One operation of an atomic Multi.
struct ZkOp {
  enum class Kind { kCreate, kSet, kCheck, kDelete };
  Kind kind;
  std::string path;
  std::string data;         // kCreate, kSet
  int32_t version = -1;     // kSet, kCheck, kDelete; -1: any
  ZkNodeMode mode = ZkNodeMode::kPersistent;  // kCreate
};

class ZkClient {
 public:
  using EventCallback = std::function<void(const ZkEvent&)>;

  using HeartbeatCallback = std::function<void(int64_t sent_ns, int64_t session_timeout_ns)>;
  static constexpr int kMaxHeartbeatsInFlight = 8;

  struct Options {
    std::string hosts;  // "host:port[,host:port...]"
    absl::Duration session_timeout = absl::Seconds(4);
    absl::Duration connect_timeout = absl::Seconds(10);
    absl::Duration heartbeat_interval = absl::ZeroDuration();  // zero: no heartbeats
    HeartbeatCallback on_heartbeat;
  };

  // Errors: InvalidArgument for a malformed host list; Unavailable when no session
  // comes up within connect_timeout.
  static absl::StatusOr<std::unique_ptr<ZkClient>> Connect(const Options& options,
                                                          EventCallback on_event);
  ~ZkClient();  // closes the session: our ephemeral nodes vanish at once

  ZkSessionState state() const;
  // The session timeout the server granted.
  absl::Duration negotiated_timeout() const;
  const std::string& hosts() const { return options_.hosts; }
  // The session's id (0 before the session is established).
  uint64_t session_id() const;

  // Errors map ZooKeeper codes: NotFound (ZNONODE), AlreadyExists (ZNODEEXISTS),
  // FailedPrecondition (ZBADVERSION, ZNOTEMPTY), Unavailable (connection loss, closing,
  // expired session), others Internal; every message names the path.
  absl::StatusOr<std::string> Create(absl::string_view path, absl::string_view data,
                                     ZkNodeMode mode);
  // Creates each missing persistent ancestor and the path itself (empty data).
  absl::Status EnsurePath(absl::string_view path);
  absl::StatusOr<ZkNodeData> Get(absl::string_view path, bool watch);
  // Whether the node exists; with `watch`, an event follows its creation or deletion.
  absl::StatusOr<bool> Exists(absl::string_view path, bool watch);
  absl::StatusOr<std::vector<std::string>> GetChildren(absl::string_view path, bool watch);
  absl::Status Set(absl::string_view path, absl::string_view data, int32_t version);
  absl::Status Delete(absl::string_view path, int32_t version);
  // All or nothing. On failure the error names the first op that failed.
  absl::Status Multi(const std::vector<ZkOp>& ops);

 private:
  // One outstanding heartbeat: the C client's completion gets a pointer to it.
  struct Heartbeat {
    ZkClient* client = nullptr;
    int64_t sent_ns = 0;
    std::atomic<bool> in_flight{false};
  };

  explicit ZkClient(const Options& options, EventCallback on_event);
  static void Watcher(zhandle_t* zh, int type, int state, const char* path, void* ctx);
  void OnEvent(int type, int state, const char* path);
  void RunHeartbeats();
  static void HeartbeatAnswered(int rc, const ::Stat* stat, const void* data);

  const Options options_;
  const EventCallback on_event_;
  zhandle_t* zh_ = nullptr;
  mutable Mutex mu_;
  CondVar state_cv_;
  ZkSessionState state_ ABSL_GUARDED_BY(mu_) = ZkSessionState::kConnecting;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  std::array<Heartbeat, kMaxHeartbeatsInFlight> heartbeats_;
  std::thread heartbeat_thread_;
};

// Maps a ZooKeeper return code to a status whose message names `what`.
absl::Status ZkStatus(int rc, absl::string_view what);

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_ZK_CLIENT_H_
