#include "tests/tx/serializability_harness.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "farm/fabric/socket_util.h"
#include "tests/tx/serializability_protocol.h"

namespace farm::tx::testing {

using farm::testing::ChildProcess;

void SerializabilityProcessTest::SetUp() {
  char tmpl[] = "/tmp/farm-ser-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  dir_ = tmpl;
  const std::string backend = GetParam();
  std::vector<std::string> entries, listen;
  for (int id = 1; id <= kNodes; ++id) {
    if (backend == "shm") {
      entries.push_back(absl::StrCat(id, "=shm:", dir_, "/node-", id, "/fabric.sock"));
      listen.push_back("-");
    } else {
      // A free port: taken, read and released (as NodeCluster does).
      absl::StatusOr<UniqueFd> fd = ListenTcp("127.0.0.1:0");
      ASSERT_TRUE(fd.ok()) << fd.status();
      absl::StatusOr<std::string> address = LocalTcpAddress(fd->get());
      ASSERT_TRUE(address.ok()) << address.status();
      entries.push_back(absl::StrCat(id, "=tcp:", *address));
      listen.push_back(*address);
    }
  }
  const std::string members = absl::StrJoin(entries, ",");
  const absl::Time start = absl::Now();
  for (int id = 1; id <= kNodes; ++id) {
    absl::StatusOr<ChildProcess> child = farm::testing::SpawnChild(
        "tx_node", {absl::StrCat(id), backend, members, dir_, listen[id - 1]});
    ASSERT_TRUE(child.ok()) << child.status();
    nodes_.push_back(std::make_unique<ChildProcess>(std::move(*child)));
  }
  for (int id = 1; id <= kNodes; ++id) {
    absl::StatusOr<std::string> line = Node(id).ReadLine(absl::Seconds(40));
    ASSERT_TRUE(line.ok()) << "node " << id << ": " << line.status();
    ASSERT_EQ(*line, "READY") << "node " << id;
  }
  std::printf("%s: three node processes ready in %.2f s\n", backend.c_str(),
              absl::ToDoubleSeconds(absl::Now() - start));
}

void SerializabilityProcessTest::TearDown() {
  for (auto& n : nodes_) (void)n->WriteLine("STOP");
  for (auto& n : nodes_) {
    absl::StatusOr<std::string> stopped = n->ReadLineStartingWith("STOPPED", absl::Seconds(20));
    EXPECT_TRUE(stopped.ok()) << stopped.status();
    absl::StatusOr<int> code = n->Wait(absl::Seconds(10));
    EXPECT_TRUE(code.ok() && *code == 0)
        << (code.ok() ? absl::StrCat("exit ", *code) : code.status().ToString());
  }
  nodes_.clear();
  if (HasFailure()) {
    std::printf("kept %s (histories, node data) for inspection\n", dir_.c_str());
  } else {
    std::filesystem::remove_all(dir_);
  }
}

std::vector<FatPtr> SerializabilityProcessTest::AllocateEverywhere(
    const std::string& kind, size_t per_node, const std::vector<uint32_t>& sizes) {
  std::vector<FatPtr> all;
  for (int id = 1; id <= kNodes; ++id) {
    EXPECT_TRUE(
        Node(id)
            .WriteLine(absl::StrCat("ALLOC ", kind, " ", per_node, " ", absl::StrJoin(sizes, " ")))
            .ok());
  }
  for (int id = 1; id <= kNodes; ++id) {
    absl::StatusOr<std::string> line = Node(id).ReadLine(absl::Seconds(30));
    EXPECT_TRUE(line.ok() && absl::StartsWith(*line, "OBJECTS "))
        << "node " << id << ": " << (line.ok() ? *line : line.status().ToString());
    if (!line.ok()) continue;
    std::vector<FatPtr> ptrs = ParsePtrs(absl::StrSplit(*line, ' ', absl::SkipEmpty()), 1);
    EXPECT_EQ(ptrs.size(), per_node) << *line;
    all.insert(all.end(), ptrs.begin(), ptrs.end());
  }
  return all;
}

std::vector<std::string> SerializabilityProcessTest::RunEverywhere(const std::string& command,
                                                                   int64_t ms) {
  for (int id = 1; id <= kNodes; ++id) EXPECT_TRUE(Node(id).WriteLine(command).ok());
  std::vector<std::string> done;
  for (int id = 1; id <= kNodes; ++id) {
    for (;;) {
      absl::StatusOr<std::string> line =
          Node(id).ReadLine(absl::Milliseconds(ms) + absl::Seconds(90));
      if (!line.ok()) {
        ADD_FAILURE() << "node " << id << ": " << line.status();
        done.push_back("");
        break;
      }
      if (absl::StartsWith(*line, "ERROR")) {
        ADD_FAILURE() << "node " << id << ": " << *line;
        continue;
      }
      if (absl::StartsWith(*line, "DONE")) {
        std::printf("  %s\n", line->c_str());
        done.push_back(*line);
        break;
      }
    }
  }
  return done;
}

}  // namespace farm::tx::testing
