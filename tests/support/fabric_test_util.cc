#include "tests/support/fabric_test_util.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace farm::testing {

namespace {

std::vector<std::string> ListFromEnv(const char* name) {
  const char* env = std::getenv(name);
  if (env == nullptr) return {};
  return absl::StrSplit(env, absl::ByAnyChar(", "), absl::SkipWhitespace());
}

}  // namespace

std::vector<std::string> TestBackends() {
  std::vector<std::string> backends = ListFromEnv("FARM_TEST_FABRICS");
  if (backends.empty()) backends = {"shm", "tcp"};
  return backends;
}

std::vector<std::string> TestVerbsDevices() { return ListFromEnv("FARM_TEST_VERBS_DEVICES"); }

FabricOptions TestFabricOptions(const std::string& backend) {
  static std::atomic<int> counter{0};
  FabricOptions options;
  options.backend = backend;
  options.cluster_secret = kTestSecret;
  if (backend == "verbs") {
    static const std::vector<std::string> devices = TestVerbsDevices();
    if (!devices.empty()) {
      options.device = devices[(::getpid() + counter.fetch_add(1)) % devices.size()];
    }
  }
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

double StressScale() {
  const char* env = std::getenv("FARM_STRESS_SCALE");
  double scale = 1;
  if (env != nullptr && absl::SimpleAtod(env, &scale) && scale > 0) return scale;
  return 1;
}

}  // namespace farm::testing
