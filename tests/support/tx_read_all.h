// ReadAllInOneTx: the transaction tests' way to look at objects: one transaction on a
// node's worker thread reads every object and commits (a read-only transaction, so its
// copies are a consistent snapshot), and the caller waits for it.
#ifndef FARM_TESTS_SUPPORT_TX_READ_ALL_H_
#define FARM_TESTS_SUPPORT_TX_READ_ALL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "farm/base/address.h"
#include "farm/node/node.h"

namespace farm::testing {

// The objects' payloads, in order. A failed read aborts the transaction and returns the
// first error; otherwise the commit's error (Aborted on a conflict: retry if wanted).
// Blocks the calling thread, which must not be `node`'s worker thread `t`.
absl::StatusOr<std::vector<std::string>> ReadAllInOneTx(node::Node& node, std::vector<FatPtr> objects,
                                                        size_t t = 0);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_TX_READ_ALL_H_
