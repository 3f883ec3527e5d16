// Helpers for tests of one-sided access between processes: an owner process exposing a
// registered region, an initiator connected to it, READY/RESULT line protocol with the
// test process.
#ifndef FARM_TESTS_SUPPORT_ONE_SIDED_PEERS_H_
#define FARM_TESTS_SUPPORT_ONE_SIDED_PEERS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "farm/base/region.h"
#include "farm/fabric/fabric.h"
#include "tests/support/child_process.h"

namespace farm::testing {

// A fabric that accepts everyone with the secret and owns one registered region.
// Exits the (child) process when the fabric cannot be created.
struct Owner {
  std::unique_ptr<Region> region;  // outlives the fabric that registered it
  std::unique_ptr<Fabric> fabric;
  RegionCapability cap;
};
Owner StartOwner(const std::string& backend, RegionId region, uint64_t bytes);

// An initiator connected to `locator`, with a registered local buffer of `bytes`.
struct Initiator {
  std::unique_ptr<Region> buffer;  // outlives the fabric that registered it
  std::unique_ptr<Fabric> fabric;
  LocalRegion local;
  std::unique_ptr<CompletionQueue> cq;
  std::unique_ptr<Endpoint> ep;
};
absl::StatusOr<Initiator> ConnectInitiator(const std::string& backend, const std::string& locator,
                                           uint64_t bytes);

// A one-sided op from `in`'s buffer at `local_offset` to `cap` at `offset`.
WorkRequest MakeOp(const Initiator& in, Opcode op, const RegionCapability& cap, uint64_t offset,
                   uint32_t length, uint64_t local_offset = 0);

// The child's "READY <locator> <capability>" line.
struct Ready {
  std::string locator;
  RegionCapability cap;
};
Ready ParseReady(ChildProcess& child);
// Prints the READY line for `owner` (child side).
void PrintReady(const Owner& owner);

// "KEY=value" from a line; a test failure when missing.
uint64_t Field(const std::string& line, const std::string& key);

// Child side: blocks until the test writes "STOP" (or closes stdin).
void WaitForStop();

}  // namespace farm::testing

#endif  // FARM_TESTS_SUPPORT_ONE_SIDED_PEERS_H_
