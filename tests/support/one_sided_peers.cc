#include "tests/support/one_sided_peers.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm::testing {

Owner StartOwner(const std::string& backend, RegionId region, uint64_t bytes) {
  Owner o;
  absl::StatusOr<std::unique_ptr<Fabric>> f = Fabric::Create(TestFabricOptions(backend));
  if (!f.ok()) {
    std::fprintf(stderr, "fabric: %s\n", f.status().ToString().c_str());
    std::exit(3);
  }
  o.fabric = std::move(*f);
  (void)o.fabric->Listen([](absl::string_view) { return AcceptResult{}; });
  o.region = std::make_unique<Region>(*Region::Create(region, bytes));
  o.cap = o.fabric->RegisterRegion(*o.region)->capability;
  return o;
}

absl::StatusOr<Initiator> ConnectInitiator(const std::string& backend, const std::string& locator,
                                           uint64_t bytes) {
  Initiator in;
  absl::StatusOr<std::unique_ptr<Fabric>> f = Fabric::Create(TestFabricOptions(backend));
  if (!f.ok()) return f.status();
  in.fabric = std::move(*f);
  absl::StatusOr<Region> buffer = Region::Create(kFirstPrivateRegion, bytes);
  if (!buffer.ok()) return buffer.status();
  in.buffer = std::make_unique<Region>(std::move(*buffer));
  absl::StatusOr<RegisteredRegion> reg = in.fabric->RegisterRegion(*in.buffer);
  if (!reg.ok()) return reg.status();
  in.local = reg->local;
  absl::StatusOr<std::unique_ptr<CompletionQueue>> cq = in.fabric->CreateCompletionQueue();
  if (!cq.ok()) return cq.status();
  in.cq = std::move(*cq);
  absl::StatusOr<Connection> conn = in.fabric->Connect(locator, "", in.cq.get(), 1);
  if (!conn.ok()) return conn.status();
  in.ep = std::move(conn->endpoint);
  return in;
}

WorkRequest MakeOp(const Initiator& in, Opcode op, const RegionCapability& cap, uint64_t offset,
                   uint32_t length, uint64_t local_offset) {
  WorkRequest wr;
  wr.opcode = op;
  wr.local = in.local.base + local_offset;
  wr.length = length;
  wr.lkey = in.local.lkey;
  wr.remote = &cap;
  wr.remote_offset = offset;
  return wr;
}

Ready ParseReady(ChildProcess& child) {
  absl::StatusOr<std::string> line = child.ReadLineStartingWith("READY", absl::Seconds(20));
  EXPECT_TRUE(line.ok()) << line.status();
  std::vector<std::string> parts = absl::StrSplit(line.value_or(""), ' ');
  EXPECT_EQ(parts.size(), 3u);
  Ready r;
  if (parts.size() == 3) {
    r.locator = parts[1];
    r.cap = DecodeCapability(parts[2]).value_or(RegionCapability{});
  }
  return r;
}

void PrintReady(const Owner& owner) {
  std::printf("READY %s %s\n", owner.fabric->locator().c_str(), EncodeCapability(owner.cap).c_str());
  std::fflush(stdout);
}

uint64_t Field(const std::string& line, const std::string& key) {
  for (absl::string_view part : absl::StrSplit(line, ' ')) {
    if (absl::ConsumePrefix(&part, key + "=")) {
      uint64_t v = 0;
      if (absl::SimpleAtoi(part, &v)) return v;
    }
  }
  ADD_FAILURE() << "no " << key << " in '" << line << "'";
  return 0;
}

void WaitForStop() {
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
    if (std::strncmp(line, "STOP", 4) == 0) return;
  }
}

}  // namespace farm::testing
