// SerializabilityProcessTest: the parent side of the serializability tests, one fixture
// per fabric backend (the parameter: "shm" or "tcp"). SetUp starts kNodes tx_node child
// processes (serializability_node.cc) on that backend, with static membership and data
// in a fresh /tmp/farm-ser-XXXXXX directory, and returns once every one is READY.
// TearDown stops them (each must print STOPPED and exit 0) and removes the directory
// unless the test failed. The helpers report problems with EXPECT/ADD_FAILURE and carry
// on with what they got.
#ifndef FARM_TESTS_TX_SERIALIZABILITY_HARNESS_H_
#define FARM_TESTS_TX_SERIALIZABILITY_HARNESS_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "farm/api/farm.h"
#include "gtest/gtest.h"
#include "tests/support/child_process.h"
#include "tests/support/fabric_test_util.h"

namespace farm::tx::testing {

class SerializabilityProcessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Node `id`, 1..kNodes.
  farm::testing::ChildProcess& Node(int id) { return *nodes_[id - 1]; }

  // Each node allocates `per_node` objects; all of them, node 1's first.
  std::vector<FatPtr> AllocateEverywhere(const std::string& kind, size_t per_node,
                                         const std::vector<uint32_t>& sizes);

  // Sends `command` to every node and collects their DONE lines; ERROR lines fail the test.
  std::vector<std::string> RunEverywhere(const std::string& command, int64_t ms);

  // `ms` times the stress scale, at least 300.
  static int64_t WorkloadMs(int64_t ms) {
    return std::max<int64_t>(
        300, static_cast<int64_t>(static_cast<double>(ms) * farm::testing::StressScale()));
  }

  std::string dir_;
  std::vector<std::unique_ptr<farm::testing::ChildProcess>> nodes_;
};

}  // namespace farm::tx::testing

#endif  // FARM_TESTS_TX_SERIALIZABILITY_HARNESS_H_
