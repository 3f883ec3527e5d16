// SessionEnv: RespSessions on a FakeStore whose EventLoop the test thread drives by
// hand (RunOnce), so session tests are deterministic and need no threads.
#ifndef FARM_TESTS_KV_RESP_SESSION_ENV_H_
#define FARM_TESTS_KV_RESP_SESSION_ENV_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/doorbell.h"
#include "kv/resp/resp_session.h"
#include "tests/kv/resp/fake_store.h"

namespace farm::kv::testing {

class SessionEnv {
 public:
  explicit SessionEnv(FakeStoreOptions store_options = {},
                      StoreLimits limits = {.max_key_bytes = 1024, .max_value_bytes = 1 << 20});
  ~SessionEnv();

  FakeCluster& cluster() { return cluster_; }
  FakeStore& store() { return *store_; }
  EventLoop& loop() { return *loop_; }

  std::shared_ptr<resp::RespSession> NewSession(resp::RespSessionOptions options = {});
  // Runs the loop until no store operation is pending; false on timeout.
  bool Drain(absl::Duration timeout = absl::Seconds(5));

  // Feeds `input` to `session`, drains, and returns the replies that came out (their
  // output is consumed). Fails the test if the output is not well-formed RESP.
  std::vector<std::string> Exchange(resp::RespSession& session, absl::string_view input);
  // The same for one command given as words (sent as a multibulk request).
  std::vector<std::string> Command(resp::RespSession& session, std::vector<std::string> words);

 private:
  FakeCluster cluster_;
  std::unique_ptr<DoorbellTable> doorbells_;
  std::unique_ptr<EventLoop> loop_;
  std::unique_ptr<FakeStore> store_;
};

// Encodes words as a multibulk request.
std::string Multibulk(const std::vector<std::string>& words);

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_RESP_SESSION_ENV_H_
