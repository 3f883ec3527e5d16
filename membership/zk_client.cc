#include "membership/zk_client.h"

#include <zookeeper/zookeeper.h>

#include <cerrno>
#include <array>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "membership/lease_clock.h"

namespace farm::membership {
namespace {

ZkSessionState FromZkState(int state) {
  if (state == ZOO_CONNECTED_STATE || state == ZOO_READONLY_STATE) return ZkSessionState::kConnected;
  if (state == ZOO_EXPIRED_SESSION_STATE) return ZkSessionState::kExpired;
  if (state == ZOO_AUTH_FAILED_STATE) return ZkSessionState::kAuthFailed;
  return ZkSessionState::kConnecting;
}

int ToZkMode(ZkNodeMode mode) {
  switch (mode) {
    case ZkNodeMode::kPersistent: return ZOO_PERSISTENT;
    case ZkNodeMode::kEphemeral: return ZOO_EPHEMERAL;
    case ZkNodeMode::kEphemeralSequential: return ZOO_EPHEMERAL_SEQUENTIAL;
  }
  return ZOO_PERSISTENT;
}

// A path the C client accepts: absolute, no trailing slash, no empty component.
absl::Status CheckPath(absl::string_view path) {
  if (path.empty() || path[0] != '/' || (path.size() > 1 && path.back() == '/') ||
      absl::StrContains(path, "//") || path.size() > 1024) {
    return absl::InvalidArgumentError(absl::StrCat("bad ZooKeeper path '", path, "'"));
  }
  return absl::OkStatus();
}

constexpr int kMaxPath = 1024;

// The C client logs every failed connection attempt (many per second while ZooKeeper
// is down); what matters reaches the caller as a status or a session event instead.
void DropClientLog(const char*) {}

}  // namespace

const char* ZkSessionStateName(ZkSessionState state) {
  switch (state) {
    case ZkSessionState::kConnecting: return "connecting";
    case ZkSessionState::kConnected: return "connected";
    case ZkSessionState::kExpired: return "expired";
    case ZkSessionState::kAuthFailed: return "auth-failed";
    case ZkSessionState::kClosed: return "closed";
  }
  return "?";
}

absl::Status ZkStatus(int rc, absl::string_view what) {
  if (rc == ZOK) return absl::OkStatus();
  const std::string msg = absl::StrCat("ZooKeeper ", what, ": ", zerror(rc));
  switch (rc) {
    case ZNONODE: return absl::NotFoundError(msg);
    case ZNODEEXISTS: return absl::AlreadyExistsError(msg);
    case ZBADVERSION:
    case ZNOTEMPTY:
    case ZNOCHILDRENFOREPHEMERALS: return absl::FailedPreconditionError(msg);
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZINVALIDSTATE:
    case ZCLOSING: return absl::UnavailableError(msg);
    case ZBADARGUMENTS: return absl::InvalidArgumentError(msg);
    default: return absl::InternalError(msg);
  }
}

ZkClient::ZkClient(const Options& options, EventCallback on_event)
    : options_(options), on_event_(std::move(on_event)) {}

absl::StatusOr<std::unique_ptr<ZkClient>> ZkClient::Connect(const Options& options,
                                                            EventCallback on_event) {
  if (options.hosts.empty()) return absl::InvalidArgumentError("empty ZooKeeper address");
  for (absl::string_view host : absl::StrSplit(options.hosts, ',')) {
    const size_t colon = host.rfind(':');
    if (colon == absl::string_view::npos || colon == 0 || colon + 1 == host.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("ZooKeeper address '", host, "' is not host:port"));
    }
  }
  std::unique_ptr<ZkClient> client(new ZkClient(options, std::move(on_event)));
  const int timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(options.session_timeout));
  client->zh_ = zookeeper_init2(options.hosts.c_str(), &ZkClient::Watcher, timeout_ms, nullptr,
                                client.get(), 0, &DropClientLog);
  if (client->zh_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ZooKeeper client refused '%s': %s", options.hosts, std::strerror(errno)));
  }
  bool up = false;
  ZkSessionState state;
  {
    MutexLock lock(&client->mu_);
    up = client->state_cv_.WaitFor(&client->mu_, options.connect_timeout,
                                   [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                     return client->state_ != ZkSessionState::kConnecting;
                                   });
    state = client->state_;
  }
  if (state != ZkSessionState::kConnected) {
    return absl::UnavailableError(absl::StrFormat(
        "no ZooKeeper session with %s within %s (%s)", options.hosts,
        absl::FormatDuration(options.connect_timeout),
        up ? ZkSessionStateName(state) : "is it running and reachable?"));
  }
  if (options.heartbeat_interval > absl::ZeroDuration()) {
    for (Heartbeat& h : client->heartbeats_) h.client = client.get();
    client->heartbeat_thread_ = std::thread([c = client.get()] { c->RunHeartbeats(); });
  }
  return client;
}

ZkClient::~ZkClient() {
  {
    MutexLock lock(&mu_);
    closing_ = true;
    state_cv_.SignalAll();
  }
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  // Joins the client's threads. A heartbeat still unanswered is completed with an error
  // or not at all; either way its slot lives until here.
  if (zh_ != nullptr) zookeeper_close(zh_);
}

void ZkClient::RunHeartbeats() {
  for (;;) {
    {
      MutexLock lock(&mu_);
      state_cv_.WaitFor(&mu_, options_.heartbeat_interval,
                        [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return closing_; });
      if (closing_) return;
    }
    // Every slot busy: the server is slow or unreachable. Sending more would not renew
    // the lease any sooner; the next free slot goes out on a later tick.
    Heartbeat* free = nullptr;
    for (Heartbeat& h : heartbeats_) {
      if (!h.in_flight.load(std::memory_order_acquire)) {
        free = &h;
        break;
      }
    }
    if (free == nullptr) continue;
    free->sent_ns = LeaseClockNowNs();  // before the send: the answer proves a touch after it
    free->in_flight.store(true, std::memory_order_release);
    if (zoo_aexists(zh_, "/", 0, &ZkClient::HeartbeatAnswered, free) != ZOK) {
      free->in_flight.store(false, std::memory_order_release);  // not queued (closing, expired)
    }
  }
}

void ZkClient::HeartbeatAnswered(int rc, const ::Stat*, const void* data) {
  Heartbeat* h = const_cast<Heartbeat*>(static_cast<const Heartbeat*>(data));
  ZkClient* client = h->client;
  if (rc == ZOK && client->options_.on_heartbeat) {
    client->options_.on_heartbeat(h->sent_ns, int64_t{zoo_recv_timeout(client->zh_)} * 1'000'000);
  }
  h->in_flight.store(false, std::memory_order_release);
}

void ZkClient::Watcher(zhandle_t*, int type, int state, const char* path, void* ctx) {
  static_cast<ZkClient*>(ctx)->OnEvent(type, state, path);
}

void ZkClient::OnEvent(int type, int state, const char* path) {
  ZkEvent event;
  event.state = FromZkState(state);
  if (type == ZOO_SESSION_EVENT) {
    event.type = ZkEvent::Type::kSession;
    MutexLock lock(&mu_);
    state_ = event.state;
    state_cv_.SignalAll();
  } else {
    event.path = path != nullptr ? path : "";
    if (type == ZOO_CREATED_EVENT) event.type = ZkEvent::Type::kCreated;
    else if (type == ZOO_DELETED_EVENT) event.type = ZkEvent::Type::kDeleted;
    else if (type == ZOO_CHANGED_EVENT) event.type = ZkEvent::Type::kChanged;
    else if (type == ZOO_CHILD_EVENT) event.type = ZkEvent::Type::kChildren;
    else event.type = ZkEvent::Type::kNotWatching;
  }
  if (on_event_) on_event_(event);
}

ZkSessionState ZkClient::state() const {
  MutexLock lock(&mu_);
  return state_;
}

uint64_t ZkClient::session_id() const {
  const clientid_t* id = zoo_client_id(zh_);
  return id == nullptr ? 0 : static_cast<uint64_t>(id->client_id);
}

absl::Duration ZkClient::negotiated_timeout() const {
  return absl::Milliseconds(zoo_recv_timeout(zh_));
}

absl::StatusOr<std::string> ZkClient::Create(absl::string_view path, absl::string_view data,
                                             ZkNodeMode mode) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  char created[kMaxPath];
  const int rc = zoo_create(zh_, p.c_str(), data.data(), static_cast<int>(data.size()),
                            &ZOO_OPEN_ACL_UNSAFE, ToZkMode(mode), created, sizeof(created));
  if (rc != ZOK) return ZkStatus(rc, absl::StrCat("create ", path));
  return std::string(created);
}

absl::Status ZkClient::EnsurePath(absl::string_view path) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  for (size_t end = 1; end <= path.size(); ++end) {
    if (end != path.size() && path[end] != '/') continue;
    absl::StatusOr<std::string> created = Create(path.substr(0, end), "", ZkNodeMode::kPersistent);
    if (!created.ok() && !absl::IsAlreadyExists(created.status())) return created.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<ZkNodeData> ZkClient::Get(absl::string_view path, bool watch) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  std::string buffer(64 << 10, '\0');
  for (;;) {
    int len = static_cast<int>(buffer.size());
    struct Stat stat;
    const int rc = zoo_get(zh_, p.c_str(), watch ? 1 : 0, buffer.data(), &len, &stat);
    if (rc != ZOK) return ZkStatus(rc, absl::StrCat("get ", path));
    if (stat.dataLength > static_cast<int>(buffer.size())) {  // grew past the buffer
      buffer.resize(stat.dataLength);
      continue;
    }
    buffer.resize(len < 0 ? 0 : len);
    return ZkNodeData{std::move(buffer), stat.version};
  }
}

absl::StatusOr<bool> ZkClient::Exists(absl::string_view path, bool watch) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  struct Stat stat;
  const int rc = zoo_exists(zh_, p.c_str(), watch ? 1 : 0, &stat);
  if (rc == ZNONODE) return false;
  if (rc != ZOK) return ZkStatus(rc, absl::StrCat("exists ", path));
  return true;
}

absl::StatusOr<std::vector<std::string>> ZkClient::GetChildren(absl::string_view path,
                                                               bool watch) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  String_vector children{};
  const int rc = zoo_get_children(zh_, p.c_str(), watch ? 1 : 0, &children);
  if (rc != ZOK) return ZkStatus(rc, absl::StrCat("children of ", path));
  std::vector<std::string> out(children.data, children.data + children.count);
  deallocate_String_vector(&children);
  return out;
}

absl::Status ZkClient::Set(absl::string_view path, absl::string_view data, int32_t version) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  return ZkStatus(zoo_set(zh_, p.c_str(), data.data(), static_cast<int>(data.size()), version),
                  absl::StrCat("set ", path));
}

absl::Status ZkClient::Delete(absl::string_view path, int32_t version) {
  if (absl::Status s = CheckPath(path); !s.ok()) return s;
  const std::string p(path);
  return ZkStatus(zoo_delete(zh_, p.c_str(), version), absl::StrCat("delete ", path));
}

absl::Status ZkClient::Multi(const std::vector<ZkOp>& ops) {
  if (ops.empty()) return absl::OkStatus();
  std::vector<zoo_op_t> zops(ops.size());
  std::vector<zoo_op_result_t> results(ops.size());
  std::vector<std::array<char, kMaxPath>> created(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    const ZkOp& op = ops[i];
    if (absl::Status s = CheckPath(op.path); !s.ok()) return s;
    switch (op.kind) {
      case ZkOp::Kind::kCreate:
        zoo_create_op_init(&zops[i], op.path.c_str(), op.data.data(),
                           static_cast<int>(op.data.size()), &ZOO_OPEN_ACL_UNSAFE,
                           ToZkMode(op.mode), created[i].data(), kMaxPath);
        break;
      case ZkOp::Kind::kSet:
        zoo_set_op_init(&zops[i], op.path.c_str(), op.data.data(),
                        static_cast<int>(op.data.size()), op.version, nullptr);
        break;
      case ZkOp::Kind::kCheck:
        zoo_check_op_init(&zops[i], op.path.c_str(), op.version);
        break;
      case ZkOp::Kind::kDelete:
        zoo_delete_op_init(&zops[i], op.path.c_str(), op.version);
        break;
    }
  }
  const int rc = zoo_multi(zh_, static_cast<int>(zops.size()), zops.data(), results.data());
  if (rc == ZOK) return absl::OkStatus();
  for (size_t i = 0; i < ops.size(); ++i) {
    // The failing op carries the error; the others report ZRUNTIMEINCONSISTENCY/ZOK.
    if (results[i].err != ZOK && results[i].err != ZRUNTIMEINCONSISTENCY) {
      return ZkStatus(results[i].err, absl::StrFormat("multi op %d on %s", i, ops[i].path));
    }
  }
  return ZkStatus(rc, "multi");
}

}  // namespace farm::membership
