// Every backend against LinkBench's contract (backend_contract.h): the memory backend
// and the mariadb backend on a real private mariadbd (skipped only when mariadbd is not
// installed). The farm and graph-resp backends run the same cases against a real
// cluster in cluster_backend_test.cc.
#include <unistd.h>

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "tests/linkbench/backend_contract.h"
#include "tools/linkbench/backend_registry.h"

namespace farm::linkbench {
namespace {

INSTANTIATE_TEST_SUITE_P(Backends, BackendContractTest,
                         ::testing::Values(ContractTarget{"memory"}, ContractTarget{"mariadb"}), ContractTargetName);

TEST(BackendRegistryTest, UnknownNameListsTheKnownOnes) {
  auto b = OpenBackend("nope", BackendOptions{});
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(b.status().message().find("memory, mariadb, farm, graph-resp"), std::string::npos);
}

TEST(BackendRegistryTest, FarmAndGraphRespNeedTheirSettings) {
  auto farm = OpenBackend("farm", BackendOptions{});
  EXPECT_EQ(farm.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(farm.status().message().find("zookeeper"), std::string::npos) << farm.status();
  auto resp = OpenBackend("graph-resp", BackendOptions{});
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument);
  BackendOptions bad;
  bad.settings["graph_resp"] = "127.0.0.1";
  resp = OpenBackend("graph-resp", bad);
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(resp.status().message().find("not host:port"), std::string::npos) << resp.status();
  BackendOptions closed;
  closed.settings["graph_resp"] = "127.0.0.1:1";  // nothing listens on port 1
  resp = OpenBackend("graph-resp", closed);
  EXPECT_EQ(resp.status().code(), absl::StatusCode::kUnavailable) << resp.status();
}

TEST(BackendRegistryTest, MissingMariadbdIsAClearError) {
  BackendOptions o;
  o.settings["mariadbd"] = "/nonexistent/mariadbd";
  auto b = OpenBackend("mariadb", o);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(b.status().message().find("mariadb-server"), std::string::npos);
}

TEST(BackendRegistryTest, AFlushPolicyOtherThanInnodbsIsAClearError) {
  for (const char* bad : {"3", "-1", "always"}) {
    BackendOptions o;
    o.settings["mysql_flush_log_at_trx_commit"] = bad;
    auto b = OpenBackend("mariadb", o);
    EXPECT_EQ(b.status().code(), absl::StatusCode::kInvalidArgument) << bad << ": " << b.status();
    EXPECT_NE(b.status().message().find("0, 1 or 2"), std::string::npos) << b.status();
  }
}

}  // namespace
}  // namespace farm::linkbench
