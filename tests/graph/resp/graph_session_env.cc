#include "tests/graph/resp/graph_session_env.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/kv/resp/resp_reply_reader.h"

namespace farm::graph::testing {

GraphSessionEnv::GraphSessionEnv() {
  auto table = DoorbellTable::Create(4);
  EXPECT_TRUE(table.ok()) << table.status();
  doorbells_ = std::move(*table);
  auto bell = doorbells_->Allocate();
  EXPECT_TRUE(bell.ok()) << bell.status();
  auto loop = EventLoop::Create(std::move(*bell));
  EXPECT_TRUE(loop.ok()) << loop.status();
  loop_ = std::move(*loop);
  context_ = std::make_unique<LoopContext>(loop_.get(), 0);
  memory_ = std::make_unique<MemoryGraphStore>(*context_, graph_);
  faulty_ = std::make_unique<FaultyGraphStore>(*context_, *memory_);
}

GraphSessionEnv::~GraphSessionEnv() {
  Drain();
  faulty_.reset();
  memory_.reset();
  context_.reset();
  loop_.reset();
}

std::shared_ptr<GraphSession> GraphSessionEnv::NewSession(GraphSessionOptions options) {
  return GraphSession::Create(faulty_.get(), std::move(options));
}

bool GraphSessionEnv::Drain(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (loop_->RunOnce()) {
    if (absl::Now() > deadline) return false;
  }
  return true;
}

std::vector<std::string> GraphSessionEnv::Exchange(GraphSession& session, absl::string_view input) {
  session.Feed(input);
  EXPECT_TRUE(Drain()) << "store operations did not finish";
  const absl::string_view out = session.output();
  kv::testing::DecodedReplies decoded = kv::testing::DecodeReplies(out);
  EXPECT_FALSE(decoded.malformed) << "malformed output: " << out;
  EXPECT_EQ(decoded.consumed, out.size()) << "partial reply in output: " << out;
  session.ConsumeOutput(out.size());
  return decoded.replies;
}

std::string GraphSessionEnv::Command(GraphSession& session, std::vector<std::string> words) {
  std::vector<std::string> replies = Exchange(session, Multibulk(words));
  EXPECT_EQ(replies.size(), 1u) << absl::StrJoin(words, " ");
  return replies.empty() ? "(no reply)" : replies.front();
}

std::string Multibulk(const std::vector<std::string>& words) {
  std::string out = absl::StrCat("*", words.size(), "\r\n");
  for (const std::string& w : words) absl::StrAppend(&out, "$", w.size(), "\r\n", w, "\r\n");
  return out;
}

}  // namespace farm::graph::testing
