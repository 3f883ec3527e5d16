// RespSession with a CommandExtension (resp/command_extension.h), as farm_node serves the
// graph's commands on the kv port: the session's own commands win; an extension
// command waits for every earlier command and holds back every later one (a
// connection sees its own writes across services); it is refused after MULTI (EXEC
// then answers EXECABORT) and before AUTH; a reply that comes after the session is
// gone is dropped.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kv/resp/resp_session.h"
#include "resp/command_extension.h"
#include "resp/resp_writer.h"
#include "tests/kv/resp/session_env.h"

namespace farm::kv::resp {
namespace {

using ::farm::kv::testing::SessionEnv;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using Replies = std::vector<std::string>;

// Handles EXT.* and, to show the session asks only for names it does not know, GET.
// Each call waits until the test answers it.
class FakeExtension final : public ::farm::resp::CommandExtension {
 public:
  struct Pending {
    size_t thread;
    uint64_t connection;
    std::vector<std::string> args;
    absl::AnyInvocable<void(std::string)> done;
  };

  absl::string_view service() const override { return "fake"; }
  bool Handles(absl::string_view name) const override {
    return absl::StartsWithIgnoreCase(name, "ext.") || absl::EqualsIgnoreCase(name, "get");
  }
  void Run(size_t thread, uint64_t connection, absl::Span<std::string> args,
           absl::AnyInvocable<void(std::string)> done) override {
    pending.push_back({thread, connection, {args.begin(), args.end()}, std::move(done)});
  }
  // Answers the oldest pending call with a simple string of its arguments' count.
  void AnswerOldest() {
    Pending p = std::move(pending.front());
    pending.erase(pending.begin());
    p.done(::farm::resp::SimpleStringReply("ext" + std::to_string(p.args.size())));
  }

  std::vector<Pending> pending;
};

class RespExtensionTest : public ::testing::Test {
 protected:
  std::shared_ptr<RespSession> NewSession(std::string password = "") {
    RespSessionOptions options;
    options.extension = extension_;
    options.thread = 3;
    options.client_id = 42;
    options.password = std::move(password);
    return env_.NewSession(std::move(options));
  }

  SessionEnv env_;
  std::shared_ptr<FakeExtension> extension_ = std::make_shared<FakeExtension>();
};

TEST_F(RespExtensionTest, AnExtensionCommandRunsAloneBetweenTheCommandsAroundIt) {
  std::shared_ptr<RespSession> session = NewSession();
  // SET, then the extension's command, then GET of the same key: the extension runs
  // only once SET has replied, and GET starts only once the extension has.
  Replies replies = env_.Exchange(*session, testing::Multibulk({"SET", "k", "v"}) +
                                                testing::Multibulk({"EXT.TOUCH", "k", "x"}) +
                                                testing::Multibulk({"GET", "k"}));
  EXPECT_THAT(replies, ElementsAre("+OK"));
  ASSERT_EQ(extension_->pending.size(), 1u);
  EXPECT_EQ(extension_->pending[0].thread, 3u);
  EXPECT_EQ(extension_->pending[0].connection, 42u);
  EXPECT_THAT(extension_->pending[0].args, ElementsAre("EXT.TOUCH", "k", "x"));
  EXPECT_EQ(session->in_flight(), 1u) << "GET is held back";

  extension_->AnswerOldest();
  EXPECT_THAT(env_.Exchange(*session, ""), ElementsAre("+ext3", "v")) << "kv's GET, not the extension's";
  EXPECT_THAT(extension_->pending, IsEmpty());
}

TEST_F(RespExtensionTest, UnknownNamesStayUnknown) {
  std::shared_ptr<RespSession> session = NewSession();
  Replies replies = env_.Exchange(*session, testing::Multibulk({"NOPE", "1"}));
  ASSERT_EQ(replies.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(replies[0], "-ERR unknown command 'NOPE'")) << replies[0];
  EXPECT_THAT(extension_->pending, IsEmpty());
}

TEST_F(RespExtensionTest, RefusedInMultiAndBeforeAuth) {
  std::shared_ptr<RespSession> session = NewSession();
  EXPECT_THAT(env_.Command(*session, {"MULTI"}), ElementsAre("+OK"));
  EXPECT_THAT(env_.Command(*session, {"SET", "a", "1"}), ElementsAre("+QUEUED"));
  EXPECT_THAT(env_.Command(*session, {"ext.add", "1"}),
              ElementsAre("-ERR EXT.ADD is a fake command: it cannot be queued in MULTI"));
  Replies exec = env_.Command(*session, {"EXEC"});
  ASSERT_EQ(exec.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(exec[0], "-EXECABORT")) << exec[0];
  EXPECT_THAT(env_.Command(*session, {"EXISTS", "a"}), ElementsAre(":0"));
  EXPECT_THAT(extension_->pending, IsEmpty());

  std::shared_ptr<RespSession> locked = NewSession("secret");
  EXPECT_THAT(env_.Command(*locked, {"EXT.ADD", "1"}), ElementsAre("-NOAUTH Authentication required."));
  EXPECT_THAT(env_.Command(*locked, {"AUTH", "secret"}), ElementsAre("+OK"));
  EXPECT_THAT(env_.Command(*locked, {"EXT.ADD", "1"}), IsEmpty());
  ASSERT_EQ(extension_->pending.size(), 1u);
  extension_->AnswerOldest();
  EXPECT_THAT(env_.Exchange(*locked, ""), ElementsAre("+ext2"));
}

TEST_F(RespExtensionTest, AReplyAfterTheSessionIsGoneIsDropped) {
  std::shared_ptr<RespSession> session = NewSession();
  EXPECT_THAT(env_.Command(*session, {"EXT.SLOW"}), IsEmpty());
  ASSERT_EQ(extension_->pending.size(), 1u);
  session.reset();
  extension_->AnswerOldest();  // must not touch the destroyed session
  EXPECT_TRUE(env_.Drain());
}

}  // namespace
}  // namespace farm::kv::resp
