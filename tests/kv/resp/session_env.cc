#include "tests/kv/resp/session_env.h"

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/kv/resp/resp_reply_reader.h"

namespace farm::kv::testing {

SessionEnv::SessionEnv(FakeStoreOptions store_options, StoreLimits limits) : cluster_(limits) {
  auto table = DoorbellTable::Create(4);
  EXPECT_TRUE(table.ok()) << table.status();
  doorbells_ = std::move(*table);
  auto bell = doorbells_->Allocate();
  EXPECT_TRUE(bell.ok()) << bell.status();
  auto loop = EventLoop::Create(std::move(*bell));
  EXPECT_TRUE(loop.ok()) << loop.status();
  loop_ = std::move(*loop);
  store_ = std::make_unique<FakeStore>(&cluster_, loop_.get(), std::move(store_options));
}

SessionEnv::~SessionEnv() {
  Drain();
  store_.reset();
  loop_.reset();
}

std::shared_ptr<resp::RespSession> SessionEnv::NewSession(resp::RespSessionOptions options) {
  return resp::RespSession::Create(store_.get(), std::move(options));
}

bool SessionEnv::Drain(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (store_->pending() > 0) {
    if (absl::Now() > deadline) return false;
    loop_->RunOnce();
  }
  return true;
}

std::vector<std::string> SessionEnv::Exchange(resp::RespSession& session, absl::string_view input) {
  session.Feed(input);
  EXPECT_TRUE(Drain()) << "store operations did not finish";
  const absl::string_view out = session.output();
  DecodedReplies decoded = DecodeReplies(out);
  EXPECT_FALSE(decoded.malformed) << "malformed output: " << out;
  EXPECT_EQ(decoded.consumed, out.size()) << "partial reply in output: " << out;
  session.ConsumeOutput(out.size());
  return decoded.replies;
}

std::vector<std::string> SessionEnv::Command(resp::RespSession& session,
                                             std::vector<std::string> words) {
  return Exchange(session, Multibulk(words));
}

std::string Multibulk(const std::vector<std::string>& words) {
  std::string out = absl::StrCat("*", words.size(), "\r\n");
  for (const std::string& w : words) absl::StrAppend(&out, "$", w.size(), "\r\n", w, "\r\n");
  return out;
}

}  // namespace farm::kv::testing
