// Fault seams a test switches on in a node process (farm_node --test_fault=NAME), to
// force an interleaving instead of hoping a random kill finds it. Never set in
// production; a node with one logs it at start.
//
//   single-machine-crash   a single-machine commit writing two or more objects sends its
//                          commit record only to the last of its backups, and the
//                          process kills itself (SIGKILL) once that backup has
//                          acknowledged it: the other backups never see the record
//                          (tests/failover/primary_crash_test.cc).
#ifndef FARM_NODE_TEST_FAULTS_H_
#define FARM_NODE_TEST_FAULTS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/node/node.h"

namespace farm::node {

// Sets the seam named `name` in `options` (empty: none). InvalidArgument for an unknown
// name.
absl::Status SetTestFault(absl::string_view name, NodeOptions* options);

}  // namespace farm::node

#endif  // FARM_NODE_TEST_FAULTS_H_
