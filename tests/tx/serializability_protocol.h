// The line protocol between SerializabilityProcessTest (serializability_harness.h) and
// its tx_node children (serializability_node.cc), and the text forms both sides use.
// One line per message, parent to child on the child's stdin, replies on its stdout:
//   child -> READY                          node started and linked to every peer
//   ALLOC <kind> <count> <size>...          -> OBJECTS <ptr>...   (kind: ser | bank)
//   SER <ms> <seed> <ptr>...                -> ERROR <msg>... DONE <key=value>...
//   SERFINAL <ptr>...                       -> FINAL <history line>
//   BANK <ms> <seed> <ptr>...               -> ERROR <msg>... DONE <key=value>...
//   AUDIT <ptr>...                          -> AUDIT total=<n> ...
//   STOP                                    -> STOPPED
// A pointer is <addr hex>:<size>:<incarnation>. History lines (SER's history files and
// FINAL) are FormatTransaction's (serializability_history.h).
#ifndef FARM_TESTS_TX_SERIALIZABILITY_PROTOCOL_H_
#define FARM_TESTS_TX_SERIALIZABILITY_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "farm/api/farm.h"

namespace farm::tx::testing {

// Node processes, ids 1..kNodes; every node is linked to every other.
inline constexpr int kNodes = 3;

// The pointers among words[from..], in order; words that are not pointers are skipped.
std::vector<FatPtr> ParsePtrs(const std::vector<std::string>& words, size_t from);

// The pointers, space-separated; ParsePtrs reads them back.
std::string FormatPtrs(const std::vector<FatPtr>& ptrs);

// key=value fields of a result line ("DONE a=1 b=2"); 0 when missing.
uint64_t Field(absl::string_view line, absl::string_view key);

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_PROTOCOL_H_
