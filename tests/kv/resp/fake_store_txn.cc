// FakeStore's transactions (see fake_store.h).
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "tests/kv/resp/fake_store.h"

namespace farm::kv::testing {
namespace {

class FakeTxn : public StoreTxn {
 public:
  explicit FakeTxn(FakeStore* store) : store_(store) {}

  void Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) override {
    Run<absl::StatusOr<std::optional<std::string>>>(
        "txn_get", key, std::move(done), [key](FakeCluster* c, State& st, auto& done) {
          if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
          done(Visible(c, st, std::string(key)));
        });
  }

  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    Run<absl::Status>("txn_put", key, std::move(done),
                      [key, value](FakeCluster* c, State& st, auto& done) {
                        if (absl::Status s = c->CheckSizes(key, &value); !s.ok()) return done(s);
                        st.writes[std::string(key)] = std::string(value);
                        done(absl::OkStatus());
                      });
  }

  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    Run<absl::StatusOr<bool>>("txn_remove", key, std::move(done),
                              [key](FakeCluster* c, State& st, auto& done) {
                                if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) {
                                  return done(s);
                                }
                                const std::string k(key);
                                const bool existed = Visible(c, st, k).has_value();
                                // As the table: removing a missing key writes nothing
                                // (a WATCH of it is not disturbed).
                                if (existed) st.writes[k] = std::nullopt;
                                done(existed);
                              });
  }

  void Increment(absl::string_view key, int64_t delta,
                 Done<absl::StatusOr<int64_t>> done) override {
    Run<absl::StatusOr<int64_t>>(
        "txn_increment", key, std::move(done), [key, delta](FakeCluster* c, State& st, auto& done) {
          if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
          const std::string k(key);
          absl::StatusOr<int64_t> current = ParseStoredInteger(Visible(c, st, k));
          if (!current.ok()) return done(current.status());
          int64_t next = 0;
          if (__builtin_add_overflow(*current, delta, &next)) {
            return done(absl::InvalidArgumentError("increment or decrement would overflow"));
          }
          st.writes[k] = absl::StrCat(next);
          done(next);
        });
  }

  void Commit(Done<absl::Status> done) override {
    Run<absl::Status>("commit", "", std::move(done), [](FakeCluster* c, State& st, auto& done) {
      st.finished = true;
      if (absl::Status s = c->TakeInjectedCommit(); !s.ok()) return done(s);
      done(c->CommitIf(st.reads, st.writes));
    });
  }

 private:
  struct State {
    absl::flat_hash_map<std::string, uint64_t> reads;  // version at the first read
    absl::flat_hash_map<std::string, std::optional<std::string>> writes;
    bool finished = false;
  };

  // The value the transaction sees: its own write, else the cluster's (recording the
  // version the first time the key is read).
  static std::optional<std::string> Visible(FakeCluster* c, State& st, const std::string& key) {
    if (auto it = st.writes.find(key); it != st.writes.end()) return it->second;
    FakeCluster::Versioned v = c->Read(key);
    st.reads.try_emplace(key, v.version);
    return v.value;
  }

  // Schedules `op`; an injected error or a finished transaction fails it instead. The
  // work holds the state, not the transaction, which may be gone by then.
  template <typename Result, typename Op>
  void Run(absl::string_view name, absl::string_view key, Done<Result> done, Op op) {
    store_->Schedule(
        name, key,
        [c = store_->cluster(), st = state_, done = std::move(done), op = std::move(op)]() mutable {
          absl::Status s = c->TakeInjected();
          if (s.ok() && st->finished) s = absl::FailedPreconditionError("the transaction is over");
          if (!s.ok()) return done(s);
          op(c, *st, done);
        });
  }

  FakeStore* const store_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace

std::unique_ptr<StoreTxn> FakeStore::BeginTxn() { return std::make_unique<FakeTxn>(this); }

}  // namespace farm::kv::testing
