// The service host: ServiceSet's lifecycle on a recording Host (order, errors, counters,
// configuration listeners outliving the set), services on an in-process cluster
// (configurations heard, handlers declared through the Host), and a bare loop's
// Context refused for transactions.
#include "farm/api/service.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "farm/api/in_process_cluster.h"
#include "farm/api/sync.h"
#include "farm/event/event_loop.h"
#include "farm/event/loop_context.h"
#include "farm/fabric/doorbell.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm {
namespace {

using ::testing::ElementsAre;

// Everything the services did, in order, as "name:event".
using Journal = std::vector<std::string>;

class RecordingService final : public Service {
 public:
  RecordingService(std::string name, Journal* journal, absl::Status start = absl::OkStatus())
      : name_(std::move(name)), journal_(journal), start_(std::move(start)) {}
  std::string name() const override { return name_; }
  absl::Status Start() override {
    journal_->push_back(name_ + ":start");
    return start_;
  }
  void Stop() override { journal_->push_back(name_ + ":stop"); }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override { return {{"calls", 7}}; }
  void OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) override {
    journal_->push_back(absl::StrCat(name_, ":epoch ", epoch, " members ", members.size()));
  }

 private:
  const std::string name_;
  Journal* const journal_;
  const absl::Status start_;
};

// A Host without a node: records counters and keeps the configuration listeners, which
// the test calls as a node's connector thread would.
class RecordingHost final : public Host {
 public:
  explicit RecordingHost(Journal* journal) : journal_(journal) {}
  NodeId self() const override { return 1; }
  size_t thread_count() const override { return 0; }
  Context& context(size_t) const override { std::abort(); }
  bool ready() const override { return true; }
  bool compute_only() const override { return false; }
  absl::Status RegisterHandler(MsgId, AppHandler, absl::string_view) override { return absl::OkStatus(); }
  absl::Status AddConfigurationListener(ConfigurationListener listener) override {
    listeners.push_back(std::move(listener));
    return absl::OkStatus();
  }
  void AddCounters(const std::string& service, CounterSource source) override {
    journal_->push_back(service + ":counters " + absl::StrCat(source().at(0).second));
  }
  void RemoveCounters(const std::string& service) override { journal_->push_back(service + ":no counters"); }
  std::optional<std::string> Metadata(const std::string&) const override { return std::nullopt; }
  void PutMetadata(Context&, const std::string&, std::string, absl::AnyInvocable<void(absl::Status)> done) override {
    done(absl::UnimplementedError("no metadata"));
  }

  std::vector<ConfigurationListener> listeners;

 private:
  Journal* const journal_;
};

TEST(ServiceSetTest, StartsInOrderStopsInReverseAndShowsCountersOnlyWhileServing) {
  Journal journal;
  RecordingHost host(&journal);
  {
    ServiceSet set(host);
    ASSERT_TRUE(set.Add(std::make_unique<RecordingService>("a", &journal)).ok());
    ASSERT_TRUE(set.Add(std::make_unique<RecordingService>("b", &journal)).ok());
    absl::Status twice = set.Add(std::make_unique<RecordingService>("a", &journal));
    EXPECT_EQ(twice.code(), absl::StatusCode::kAlreadyExists);
    EXPECT_THAT(twice.message(), ::testing::HasSubstr("a is hosted twice"));
    ASSERT_EQ(host.listeners.size(), 1u);  // one listener serves the whole set
    host.listeners[0](4, {1, 2, 3});
    ASSERT_TRUE(set.StartAll().ok());
    set.StopAll();
    set.StopAll();  // once only; the destructor's call does nothing either
    EXPECT_EQ(set.StartAll().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_THAT(journal, ElementsAre("a:epoch 4 members 3", "b:epoch 4 members 3", "a:start", "a:counters 7",
                                   "b:start", "b:counters 7", "b:no counters", "b:stop", "a:no counters",
                                   "a:stop"));
}

TEST(ServiceSetTest, AFailedStartNamesTheServiceAndLeavesTheStartedOnesToStopAll) {
  Journal journal;
  RecordingHost host(&journal);
  ServiceSet set(host);
  ASSERT_TRUE(set.Add(std::make_unique<RecordingService>("a", &journal)).ok());
  ASSERT_TRUE(set.Add(std::make_unique<RecordingService>("b", &journal, absl::UnavailableError("no shards"))).ok());
  absl::Status started = set.StartAll();
  EXPECT_EQ(started.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(started.message(), "b: no shards");
  EXPECT_THAT(journal, ElementsAre("a:start", "a:counters 7", "b:start", "b:stop"));
  journal.clear();
  set.StopAll();
  EXPECT_THAT(journal, ElementsAre("b:stop", "a:no counters", "a:stop"));
}

TEST(ServiceSetTest, ConfigurationsArrivingAfterTheSetIsGoneReachNoService) {
  Journal journal;
  RecordingHost host(&journal);
  {
    ServiceSet set(host);
    ASSERT_TRUE(set.Add(std::make_unique<RecordingService>("a", &journal)).ok());
  }
  journal.clear();
  host.listeners.at(0)(9, {1});  // the node outlives the set (ASan: no use after free)
  EXPECT_TRUE(journal.empty());
}

// A service on every node of an in-process cluster: hears the cluster's configuration
// and answers messages declared through its Host.
class EchoService final : public Service {
 public:
  static constexpr MsgId kEchoMsgId = kApplicationMsgIds[0];

  static absl::StatusOr<std::unique_ptr<EchoService>> Create(Host& host) {
    auto service = std::unique_ptr<EchoService>(new EchoService());
    absl::Status s = msgRegisterHandler(
        host, kEchoMsgId,
        [self = host.self()](Context& ctx, const Message& m) {
          (void)msgReply(ctx, m, absl::StrCat("node ", self, " thread ", ctx.thread_index(), ": ",
                                              std::string(m.payload)));
        },
        "echo");
    if (!s.ok()) return s;
    return service;
  }
  std::string name() const override { return "echo"; }
  absl::Status Start() override { return absl::OkStatus(); }
  void Stop() override {}
  std::vector<std::pair<std::string, uint64_t>> Counters() const override { return {}; }
  void OnConfiguration(uint64_t epoch, const std::vector<NodeId>& members) override {
    MutexLock lock(&mu_);
    heard_.emplace_back(epoch, members);
  }
  std::vector<std::pair<uint64_t, std::vector<NodeId>>> heard() {
    MutexLock lock(&mu_);
    return heard_;
  }

 private:
  EchoService() = default;
  Mutex mu_;
  std::vector<std::pair<uint64_t, std::vector<NodeId>>> heard_ ABSL_GUARDED_BY(mu_);
};

TEST(ServiceHostTest, ServicesOnAnInProcessClusterHearTheConfigurationAndAnswerMessages) {
  std::map<NodeId, EchoService*> echo;
  std::map<NodeId, std::unique_ptr<ServiceSet>> sets;
  InProcessClusterOptions o;
  o.nodes = 3;
  o.dir = ::testing::TempDir() + "service_host_" + std::to_string(::getpid());
  o.before_start = [&](Host& host) -> absl::Status {
    absl::StatusOr<std::unique_ptr<EchoService>> s = EchoService::Create(host);
    if (!s.ok()) return s.status();
    echo[host.self()] = s->get();
    sets[host.self()] = std::make_unique<ServiceSet>(host);
    return sets[host.self()]->Add(std::move(*s));
  };
  absl::StatusOr<std::unique_ptr<InProcessCluster>> cluster = InProcessCluster::Start(o);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  for (auto& [id, set] : sets) ASSERT_TRUE(set->StartAll().ok());

  for (NodeId id = 1; id <= 3; ++id) {
    const absl::Time give_up = absl::Now() + absl::Seconds(20);
    while (echo[id]->heard().empty() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(5));
    std::vector<std::pair<uint64_t, std::vector<NodeId>>> heard = echo[id]->heard();
    ASSERT_FALSE(heard.empty()) << "node " << id << " heard no configuration";
    EXPECT_EQ(heard.back().second, (std::vector<NodeId>{1, 2, 3}));
    for (size_t i = 1; i < heard.size(); ++i) EXPECT_GT(heard[i].first, heard[i - 1].first);
  }

  // Node 1's thread 1 asks node 3: the handler declared through node 3's Host answers.
  Host& one = (*cluster)->host(1);
  absl::StatusOr<std::string> reply = absl::UnknownError("unset");
  Notification done;
  one.context(1).Post([&] {
    msgSendTo(one.context(1), 3, EchoService::kEchoMsgId, "ping", [&](absl::StatusOr<std::string> r) {
      reply = std::move(r);
      done.Notify();
    });
  });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_THAT(*reply, ::testing::MatchesRegex("node 3 thread [01]: ping"));

  // And the Contexts are what the API says: this machine, the thread's index, members.
  std::vector<NodeId> members;
  size_t index = 99;
  RunOnThread((*cluster)->host(2), 1, [&](Context& ctx) {
    members = ctx.members();
    index = ctx.thread_index();
    EXPECT_EQ(ctx.self(), 2u);
    EXPECT_TRUE(ctx.transactional());
  });
  EXPECT_EQ(index, 1u);
  EXPECT_EQ(members, (std::vector<NodeId>{1, 2, 3}));
  sets.clear();
}

TEST(ServiceHostDeathTest, ATransactionOnABareLoopsContextStopsWithAClearMessage) {
  EXPECT_DEATH(
      {
        auto table = DoorbellTable::Create(2);
        auto bell = (*table)->Allocate();
        auto loop = EventLoop::Create(std::move(*bell));
        LoopContext ctx(loop->get(), 0);
        EXPECT_FALSE(ctx.transactional());
        TxHandle tx = txCreate(ctx);
      },
      "a transaction, read or message on a thread that is no node's worker");
}

}  // namespace
}  // namespace farm
