// The failover tests' bank transfer: two 16-byte accounts (balance, then the sequence
// number of the last transfer that touched the account), one transaction that moves an
// amount from one to the other and stamps both with its sequence number.
#ifndef FARM_TESTS_FAILOVER_TRANSFER_H_
#define FARM_TESTS_FAILOVER_TRANSFER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "farm/base/address.h"
#include "farm/node/node.h"

namespace farm::testing {

// Each account's balance when a test creates it, and what one transfer moves.
inline constexpr int64_t kInitialBalance = 1000;
inline constexpr int64_t kAmount = 7;

struct BankAccount {
  int64_t balance = 0;
  int64_t last = 0;  // sequence number of the last transfer that touched it
};

std::string EncodeAccount(const BankAccount& a);
BankAccount DecodeAccount(const std::string& bytes);

// Moves `amount` from `from` to `to` and stamps both with `seq`, in one transaction on
// `node`'s worker thread `t` (blocks the calling thread, which must not be that one).
absl::Status Transfer(node::Node& node, FatPtr from, FatPtr to, int64_t amount, int64_t seq, size_t t = 0);

}  // namespace farm::testing

#endif  // FARM_TESTS_FAILOVER_TRANSFER_H_
