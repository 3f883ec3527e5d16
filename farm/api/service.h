// Service: an application hosted by a node — by a farm_node process (--services=NAME) or
// by a node of an in-process cluster; the same code in both. ServiceSet runs a node's
// services through their lifecycle, each step from a thread that is not one of the
// node's workers:
//
//   create      the service's own factory, given the node's Host, before the node
//               starts: it declares its message handlers (msgRegisterHandler).
//   Add         the set hands the service the configurations the node joins
//               (OnConfiguration) — still before the node starts.
//   StartAll    after the node has started: each service allocates what it needs,
//               opens, serves; then its counters appear in `farm_admin stats`.
//   StopAll     before the node stops, in reverse order: counters withdrawn, service
//               stopped (every service added, started or not). Once: later calls do
//               nothing, and the set does not start again. The destructor calls it.
#ifndef FARM_API_SERVICE_H_
#define FARM_API_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "farm/api/host.h"
#include "farm/api/sync.h"

namespace farm {

class Service {
 public:
  virtual ~Service() = default;

  // The name in --services, in logs and in `farm_admin stats`.
  virtual std::string name() const = 0;
  // Starts serving (the node has started). An error stops the process's start.
  virtual absl::Status Start() = 0;
  // Stops serving and releases what the service holds on the node's threads; idempotent.
  virtual void Stop() = 0;
  // Counters for the admin port: thread-safe and quick.
  virtual std::vector<std::pair<std::string, uint64_t>> Counters() const = 0;
  // A configuration the node has joined (members ascending), on a thread of the node's
  // own: quick and thread-safe (post work to a Context for anything longer).
  virtual void OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) {}
};

class ServiceSet {
 public:
  explicit ServiceSet(Host& host) : host_(host) {}
  ~ServiceSet();
  ServiceSet(const ServiceSet&) = delete;
  ServiceSet& operator=(const ServiceSet&) = delete;

  // Before the node starts. AlreadyExists for a second service of one name.
  absl::Status Add(std::unique_ptr<Service> service);
  // After the node has started, in the order added; stops at the first error (the
  // message names the service; the failed service is told to Stop), leaving the
  // services started so far for StopAll.
  absl::Status StartAll();
  void StopAll();

  Host& host() const { return host_; }
  bool empty() const { return services_.empty(); }
  // The services, in the order added (valid while the set lives).
  std::vector<Service*> services() const;

 private:
  // The node calls the configuration listeners until it stops, which may be after the
  // set is gone: they reach the services through this, emptied by the destructor.
  struct Listening {
    Mutex mu;
    std::vector<Service*> services ABSL_GUARDED_BY(mu);
  };

  Host& host_;
  std::shared_ptr<Listening> listening_ = std::make_shared<Listening>();
  std::vector<std::unique_ptr<Service>> services_;
  size_t started_ = 0;  // services_[0 .. started_) are serving
  bool stopped_ = false;
};

}  // namespace farm

#endif  // FARM_API_SERVICE_H_
