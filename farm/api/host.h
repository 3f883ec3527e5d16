// Host: what a service sees of the node process it runs in (farm_node --services=..., or
// a node of an in-process cluster) — its worker threads' Contexts, the place to declare
// message handlers, its counters on the admin port, and the configurations it hears.
// A service never holds the node itself.
//
//   absl::Status Install(Host& host) {                     // before the node starts
//     return msgRegisterHandler(host, kMyMsgIds[0], OnRequest, "my service");
//   }
//   ... the node starts ...
//   host.context(t).Post([] { ... });                       // work on worker thread t
//
// Threads: a Host's methods may be called from any thread, except where a method says
// "before start"; the Contexts it hands out are used on their own threads only.
#ifndef FARM_API_HOST_H_
#define FARM_API_HOST_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"

namespace farm {

class Host {
 public:
  using CounterSource = std::function<std::vector<std::pair<std::string, uint64_t>>()>;
  using ConfigurationListener = std::function<void(uint64_t epoch, const std::vector<NodeId>& members)>;

  virtual ~Host() = default;

  // This machine's id.
  virtual NodeId self() const = 0;
  // The node's worker threads: contexts 0 .. thread_count()−1.
  virtual size_t thread_count() const = 0;
  // Worker thread t's context (once the node has started); used on that thread only,
  // except for its Post.
  virtual Context& context(size_t thread) const = 0;
  // True once the node has joined a configuration and can allocate objects (a
  // service that allocates at start waits for it); for a compute-only node, once it
  // has joined and can reach every member.
  virtual bool ready() const = 0;
  // A member that runs applications but holds no data: its allocations fail, and it is
  // not among Context::members(). A service keeps its data on the other machines.
  virtual bool compute_only() const = 0;

  // Before start: `handler` answers messages `id` on every worker thread. Ids come from
  // the service's own range (farm/msg/message_ids.h); a second handler for an id fails
  // AlreadyExists naming both `service`s.
  virtual absl::Status RegisterHandler(MsgId id, AppHandler handler, absl::string_view service) = 0;
  // Before start: `listener` hears each configuration the node has linked to, epochs
  // ascending, on a thread of the node's own (quick work only: post the rest).
  virtual absl::Status AddConfigurationListener(ConfigurationListener listener) = 0;
  // The service's counters, shown by `farm_admin stats`: `source` is called from another
  // thread, so it must be thread-safe and quick. RemoveCounters before what it reads
  // is gone.
  virtual void AddCounters(const std::string& service, CounterSource source) = 0;
  virtual void RemoveCounters(const std::string& service) = 0;

  // A service's small durable value on this machine (at most 64 KiB: where its data
  // starts, e.g. kv's shard directory), kept in the node's log so that the node finds
  // it again when it restarts on its data directory (with --log_sync=off, for this run
  // only). Metadata is the last value put under `name` and made durable.
  virtual std::optional<std::string> Metadata(const std::string& name) const = 0;
  // `done` runs on `ctx`'s thread once the value is durable, or with the error.
  virtual void PutMetadata(Context& ctx, const std::string& name, std::string value,
                           absl::AnyInvocable<void(absl::Status)> done) = 0;
};

// msgRegisterHandler (paper Figure 6): declares `handler` for messages `id` on `host`,
// before the node starts. `service` names the registrant in the error a second handler
// for the id gets.
absl::Status msgRegisterHandler(Host& host, MsgId id, AppHandler handler,
                                absl::string_view service = "an application");

// Runs fn(context) on worker thread t and waits until it returns. From a thread that is
// not one of the host's worker threads (start-up and shut-down code).
void RunOnThread(Host& host, size_t t, absl::AnyInvocable<void(Context&)> fn);

}  // namespace farm

#endif  // FARM_API_HOST_H_
