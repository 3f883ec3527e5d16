// The ser workload (StrictSerializability), node side. Its objects have one to four
// cache lines of payload and hold one 64-bit value, stored at every 64-byte payload
// offset and in the last 8 bytes, so that a copy mixing two writes is detected; a new
// object holds 0, the history's initial value. Every worker thread runs recorded
// read-modify-write and read-only transactions over 2-4 objects and lock-free reads.
#ifndef FARM_TESTS_TX_SERIALIZABILITY_SER_H_
#define FARM_TESTS_TX_SERIALIZABILITY_SER_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "farm/api/farm.h"
#include "farm/node/node.h"

namespace farm::tx::testing {

// Sizes of the objects, by index: one to four cache lines of payload.
inline constexpr uint32_t kSerSizes[] = {16, 72, 136, 200};

// The value, if every copy of it agrees.
bool LoadValue(std::span<const char> d, uint64_t* v);

// SER <ms> <seed> <ptr>... (`w`, the command's words): runs the workload on every worker
// thread for `ms`, writes the history to <dir>/history-<node id>.txt, prints ERROR
// lines and one DONE line. Returns the child's exit code: 0; 2 for a malformed command;
// 3 when the workload did not end in time.
int RunSer(node::Node& node, const std::vector<std::string>& w, const std::string& dir);

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_SER_H_
