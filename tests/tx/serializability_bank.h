// The bank workload (BankTransfers), node side. An account is an object of
// kAccountBytes (four cache lines with the object's header): its balance, the serial of
// the transaction that wrote it, filler derived from both, and a CRC-32C of the rest, so
// a copy mixing two writes fails its checksum. Accounts start at kInitialBalance and
// transfers keep the total. Every worker thread runs transfers, audits of every account
// (which must see the initial total) and lock-free reads (which must pass the checksum).
#ifndef FARM_TESTS_TX_SERIALIZABILITY_BANK_H_
#define FARM_TESTS_TX_SERIALIZABILITY_BANK_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "farm/api/farm.h"
#include "farm/node/node.h"

namespace farm::tx::testing {

inline constexpr uint32_t kAccountBytes = 200;  // four cache lines with the object's header
inline constexpr int64_t kInitialBalance = 1000;

// balance, the writer's unique serial, filler derived from both, CRC-32C of the rest.
// `d` holds kAccountBytes bytes.
void StoreAccount(std::span<char> d, int64_t balance, uint64_t serial);

// The balance, if `d` is an account that passes its checksum.
bool LoadAccount(std::span<const char> d, int64_t* balance);

// BANK <ms> <seed> <ptr>... (`w`, the command's words): runs the workload on every
// worker thread for `ms`, prints ERROR lines and one DONE line. Returns the child's exit
// code: 0; 2 for a malformed command; 3 when the workload did not end in time.
int RunBank(node::Node& node, const std::vector<std::string>& w);

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_BANK_H_
