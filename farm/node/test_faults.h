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
// Several seams: their names separated by commas.
#ifndef FARM_NODE_TEST_FAULTS_H_
#define FARM_NODE_TEST_FAULTS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/node/node.h"

namespace farm::node {

// Sets the seams named in `names` (comma-separated; empty: none) in `options`.
// InvalidArgument for an unknown name.
absl::Status SetTestFault(absl::string_view names, NodeOptions* options);

}  // namespace farm::node

#endif  // FARM_NODE_TEST_FAULTS_H_
