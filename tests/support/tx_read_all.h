// The transaction tests' way to look at and change objects, each call one transaction
// on a node's worker thread that the caller waits for: ReadAllInOneTx reads every object
// and commits (a read-only transaction, so its copies are a consistent snapshot);
// WriteAllInOneTx reads every object and overwrites it; CreateObjectInOneTx allocates
// one; FreeInOneTx frees one.
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

// Sets every object's payload to `value` (cut to its size, padded with spaces).
absl::Status WriteAllInOneTx(node::Node& node, std::vector<FatPtr> objects, const std::string& value,
                             size_t t = 0);

// Allocates an object of content.size() bytes holding `content` (near `hint` if given).
// Aborted is retried, every 20 ms for up to 2 s: a new object conflicts with nothing, so
// it means the configuration was changing (a member that has just joined can be in the
// next epoch before a data node is).
absl::StatusOr<FatPtr> CreateObjectInOneTx(node::Node& node, const std::string& content, Addr hint = {},
                                           size_t t = 0);

// Frees `old`, allocates its replacement holding `content` near `hint` and overwrites
// `also` with `content` (cut to its size), all in one transaction: distributed when they
// live on different nodes. Returns the replacement.
absl::StatusOr<FatPtr> ReplaceInOneTx(node::Node& node, FatPtr old, const std::string& content,
                                      Addr hint, FatPtr also, size_t t = 0);

// Frees `object` (read, then freed at commit).
absl::Status FreeInOneTx(node::Node& node, FatPtr object, size_t t = 0);

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_TX_READ_ALL_H_
