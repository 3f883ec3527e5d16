// Backends of the ycsb driver: a backend is a name and a function that runs one
// workload against one store and returns its RunReport. main() fills a BackendRegistry
// and runs each backend named by --backend in turn.
//
// Adding one (e.g. "farm", the FaRM key-value store on a local cluster): write a
// function with the BackendRunner signature (it owns whatever the backend needs for the
// run: servers, a cluster, connections, threads, and tears them down before returning),
// register it in main.cc next to RegisterBaselineBackends. A runner builds a
// CoreWorkload from config.workload, one OpGenerator per client or application thread
// (seeded config.seed + thread index), loads records [insert_start, insert_start +
// record_count), runs the transaction phase for config.duration after config.warmup
// (or config.workload.operation_count operations), and fills the RunReport, adding its
// own figures.
#ifndef FARM_TOOLS_YCSB_BACKENDS_H_
#define FARM_TOOLS_YCSB_BACKENDS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "tools/ycsb/progress.h"
#include "tools/ycsb/report.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {

// What a backend runs; backend-independent.
struct RunConfig {
  WorkloadSpec workload;                        // validated by the runner (CoreWorkload::Create)
  int threads = 1;                              // client threads
  absl::Duration duration = absl::Seconds(10);  // measured; unused with operation_count
  absl::Duration warmup = absl::Seconds(1);     // before the measured time; not measured
  uint64_t seed = 1;                            // thread t uses seed + t
  int server_threads = 4;  // worker threads of a server the backend starts (memcached -t)
  ProgressMode progress = ProgressMode::kAuto;  // the load phase's progress on stderr
};

using BackendRunner = std::function<absl::StatusOr<RunReport>(const RunConfig&)>;

// Name -> runner, in registration order. Not thread-safe; fill it, then read it.
class BackendRegistry {
 public:
  // AlreadyExists when the name is taken.
  absl::Status Register(std::string name, std::string description, BackendRunner runner);
  // nullptr when there is none by that name.
  const BackendRunner* Find(absl::string_view name) const;
  // "name: description" lines, for --help and error messages.
  std::string Describe() const;

 private:
  struct Entry {
    std::string name;
    std::string description;
    BackendRunner runner;
  };
  std::vector<Entry> entries_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_BACKENDS_H_
