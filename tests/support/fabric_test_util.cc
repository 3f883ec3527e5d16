#include "tests/support/fabric_test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace farm::testing {

FabricOptions TestFabricOptions(const std::string& backend) {
  static std::atomic<int> counter{0};
  FabricOptions options;
  options.backend = backend;
  options.cluster_secret = kTestSecret;
  if (backend == "shm") {
    options.listen_address =
        absl::StrFormat("/tmp/farm-test-%d-%d.sock", ::getpid(), counter.fetch_add(1));
  } else {
    options.listen_address = "127.0.0.1:0";
  }
  return options;
}

absl::StatusOr<Completion> WaitForCompletion(CompletionQueue& cq, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  Completion c;
  for (uint64_t spins = 0;; ++spins) {
    if (cq.Poll(absl::MakeSpan(&c, 1)) == 1) return c;
    if ((spins & 1023) == 0 && absl::Now() > deadline) {
      return absl::DeadlineExceededError("no completion in time");
    }
  }
}

std::string CapabilityToText(const RegionCapability& cap) {
  return absl::StrFormat("%x:%x:%x:%x", cap.region, cap.length, cap.rkey, cap.remote_base);
}

absl::StatusOr<RegionCapability> CapabilityFromText(const std::string& text) {
  std::vector<std::string> parts = absl::StrSplit(text, ':');
  RegionCapability cap;
  uint64_t region;
  if (parts.size() != 4 || !absl::SimpleHexAtoi(parts[0], &region) ||
      !absl::SimpleHexAtoi(parts[1], &cap.length) || !absl::SimpleHexAtoi(parts[2], &cap.rkey) ||
      !absl::SimpleHexAtoi(parts[3], &cap.remote_base)) {
    return absl::InvalidArgumentError("bad capability text: " + text);
  }
  cap.region = static_cast<RegionId>(region);
  return cap;
}

double StressScale() {
  const char* env = std::getenv("FARM_STRESS_SCALE");
  double scale = 1;
  if (env != nullptr && absl::SimpleAtod(env, &scale) && scale > 0) return scale;
  return 1;
}

}  // namespace farm::testing
