// Fault seams a test switches on in a node process (farm_node --test_fault=NAME), to
// force an interleaving instead of hoping a random kill finds it. Never set in
// production; a node with one logs it at start.
//
//   single-machine-crash   a single-machine commit writing two or more objects sends its
//                          commit record only to the last of its backups, and the
//                          process kills itself (SIGKILL) once that backup has
//                          acknowledged it: the other backups never see the record
//                          (tests/failover/primary_crash_test.cc).
//   single-machine-crash-first   the same, with the FIRST of its backups (the region's
//                          next primary) the only one to get the record
//   hold-region-copies     failover's re-replication sends no copy: the copies stay due
//                          and their regions frozen, until a restart without the seam
//                          (tests/failover/copies_due_restart_test.cc)
//   log-fails-on-signal    the node's disk is the real one, except that once the process
//                          gets SIGUSR1 (TestFaults::Trigger) every sync fails, as on a
//                          disk gone bad: the log fails for good
//                          (tests/failover/log_failure_test.cc)
// Several seams: their names separated by commas.
#ifndef FARM_NODE_TEST_FAULTS_H_
#define FARM_NODE_TEST_FAULTS_H_

#include <signal.h>

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/node/node.h"
#include "farm/storage/file_system.h"

namespace farm::node {

// What the seams keep for the node's life (the disk a seam puts in its options) and the
// trigger a signal pulls.
class TestFaults {
 public:
  TestFaults();
  ~TestFaults();
  // The signal the process's owner hands to Trigger: SIGUSR1.
  static constexpr int kTriggerSignal = SIGUSR1;
  // Pulls the triggered seams (log-fails-on-signal: every later sync fails). False when
  // no seam waits for it.
  bool Trigger();

 private:
  friend absl::StatusOr<std::unique_ptr<TestFaults>> SetTestFaults(absl::string_view names, NodeOptions* options);
  class FailingSyncs;
  std::unique_ptr<FailingSyncs> disk_;  // log-fails-on-signal
};

// Sets the seams named in `names` (comma-separated; empty: none) in `options`, which
// may then point into the result: keep it as long as the node. InvalidArgument for an
// unknown name.
absl::StatusOr<std::unique_ptr<TestFaults>> SetTestFaults(absl::string_view names, NodeOptions* options);

}  // namespace farm::node

#endif  // FARM_NODE_TEST_FAULTS_H_
