#include "tests/failover/bank_load.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace farm::failover_test {
namespace {

// Runs op(context, finish) on `member`'s worker thread t and waits for finish(Status):
// the status, or nullopt when `timeout` passes or `*abandon` turns true first (the
// operation may still complete later; what it captures is shared, not borrowed).
template <typename Op>
std::optional<absl::Status> RunOnThread(node::Node& member, size_t t, Op op, absl::Duration timeout,
                                        const std::atomic<bool>* abandon = nullptr) {
  struct Result {
    Notification done;
    absl::Status status;
  };
  auto result = std::make_shared<Result>();
  member.loop(t).Post([&member, t, op, result]() mutable {
    op(member.context(t), [result](absl::Status s) {
      result->status = std::move(s);
      result->done.Notify();
    });
  });
  const absl::Time deadline = absl::Now() + timeout;
  while (!result->done.WaitForNotificationWithTimeout(absl::Milliseconds(100))) {
    if (absl::Now() >= deadline || (abandon != nullptr && abandon->load())) return std::nullopt;
  }
  return result->status;
}

}  // namespace

std::string Encode(const Account& a) {
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}
Account Decode(const char* bytes, size_t size) {
  Account a;
  std::memcpy(&a, bytes, std::min(size, sizeof(a)));
  return a;
}

// One transaction on the member's thread t: reads `accounts`, applies `change` to their
// values, writes every one back and commits. A read's error or the commit's status
// (Aborted: a conflict); nullopt when it did not complete (RunOnThread).
using Change = std::function<void(std::vector<Account>&)>;
std::optional<absl::Status> ReadModifyWrite(node::Node& member, size_t t,
                                            std::vector<FatPtr> accounts, Change change,
                                            absl::Duration timeout,
                                            const std::atomic<bool>* abandon) {
  auto op = [accounts, change](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    auto objs = std::make_shared<std::vector<ObjBuf*>>(accounts.size(), nullptr);
    auto left = std::make_shared<size_t>(accounts.size());
    auto failed = std::make_shared<absl::Status>();
    for (size_t i = 0; i < accounts.size(); ++i) {
      txRead(*tx, accounts[i], [=](absl::StatusOr<ObjBuf*> o) mutable {
        if (o.ok()) {
          (*objs)[i] = *o;
        } else {
          failed->Update(o.status());
        }
        if (--*left > 0) return;
        if (failed->ok()) {
          std::vector<Account> values;
          for (ObjBuf* b : *objs) values.push_back(Decode(b->data().data(), b->data().size()));
          change(values);
          for (size_t j = 0; j < values.size(); ++j) {
            const std::string bytes = Encode(values[j]);
            std::copy(bytes.begin(),
                      bytes.begin() + std::min(bytes.size(), (*objs)[j]->data().size()),
                      (*objs)[j]->data().begin());
            failed->Update(txWrite(*tx, (*objs)[j]));
          }
        }
        if (!failed->ok()) {
          txAbort(*tx);
          return finish(*failed);
        }
        txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
      });
    }
  };
  return RunOnThread(member, t, op, timeout, abandon);
}

// A status for a tally: its code and message with every token that holds a digit (ids,
// addresses, durations) replaced by '#', so that failures of one kind count together.
std::string Kind(const absl::Status& s) {
  std::vector<std::string> words = absl::StrSplit(s.message(), ' ');
  for (std::string& w : words) {
    if (std::any_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; }))
      w.assign(1, '#');
  }
  std::string message = absl::StrJoin(words, " ");
  if (message.size() > 200) {
    message.resize(200);
    message += "...";
  }
  return absl::StrCat(absl::StatusCodeToString(s.code()), ": ", message);
}

std::string Secs(absl::Duration d) { return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(d)); }

Load::Load(node::Node& member, const std::vector<FatPtr>& accounts, std::vector<ChainBook>& books,
           int round)
    : member_(member), accounts_(accounts), books_(books), rounds_(kChains) {
  for (size_t c = 0; c < kChains; ++c) {
    books_[c].seq = std::max(books_[c].seq, int64_t{round} << 32);
    threads_.emplace_back([this, c] { Run(c); });
  }
}

Load::~Load() {
  abandon_.store(true);
  Stop();
}

void Load::Killed(Kill kill) {
  MutexLock lock(&mu_);
  kill_ = std::move(kill);
}

bool Load::WaitRecovered(absl::Time deadline) {
  auto done = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    bool all = true;
    for (const Round& r : rounds_) {
      if (!r.stuck.empty()) return true;
      all = all && r.recovered.has_value();
    }
    return all;
  };
  MutexLock lock(&mu_);
  // A chain's every outcome signals (Note), so the predicate is looked at again.
  cv_.WaitFor(&mu_, std::max(absl::ZeroDuration(), deadline - absl::Now()),
              [&]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return done(); });
  for (const Round& r : rounds_) {
    if (!r.recovered.has_value()) return false;
  }
  return true;
}

void Load::Stop() {
  stop_.store(true);
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

Load::Times Load::Measured() {
  MutexLock lock(&mu_);
  Times t;
  if (!kill_) return t;
  auto earliest = [&](std::optional<absl::Duration>& out, const std::optional<absl::Time>& at) {
    if (at && (!out || *at - kill_->at < *out)) out = *at - kill_->at;
  };
  bool all = true;
  absl::Time last = kill_->at;
  for (const Round& r : rounds_) {
    earliest(t.first_commit, r.first_commit);
    earliest(t.first_on_primary, r.first_on_primary);
    if (r.recovered) last = std::max(last, *r.recovered);
    all = all && r.recovered.has_value();
  }
  if (all) t.every_chain = last - kill_->at;
  return t;
}

std::string Load::Describe() {
  MutexLock lock(&mu_);
  std::string out;
  const absl::Time now = absl::Now();
  for (size_t c = 0; c < rounds_.size(); ++c) {
    const Round& r = rounds_[c];
    absl::StrAppend(&out, "  chain ", c, ": ");
    if (!r.stuck.empty()) {
      absl::StrAppend(&out, r.stuck);
    } else if (r.recovered && kill_) {
      absl::StrAppend(&out, "committed on the victim's accounts ", Secs(*r.recovered - kill_->at),
                      " after the kill",
                      kill_->affected.empty() ? " (it held no copy of any: on any account)" : "");
    } else {
      absl::StrAppend(&out, "no commit on the victim's accounts since the kill");
      if (r.first_commit && kill_) {
        absl::StrAppend(&out, " (its first commit elsewhere: ", Secs(*r.first_commit - kill_->at),
                        ")");
      }
      if (r.in_flight_since) {
        absl::StrAppend(&out, "; ", r.in_flight, " in flight for ", Secs(now - *r.in_flight_since));
      }
    }
    absl::StrAppend(&out, "\n");
    for (const auto& [kind, f] : r.failures) {
      absl::StrAppend(&out, "    ", f.count, " x ", kind, "\n      from ",
                      Secs(f.first - kill_->at), " to ", Secs(f.last - kill_->at),
                      " after the kill; the last: ", f.example, "\n");
    }
  }
  return out;
}

void Load::Run(size_t c) {
  absl::BitGen gen;
  ChainBook& book = books_[c];
  size_t a = 0, b = 0;
  int64_t amount = 0;
  bool retry = false;
  while (!stop_.load()) {
    if (!retry) {  // a failed transfer is tried again (a fresh seq): failover must let it through
      a = absl::Uniform<size_t>(gen, 0, accounts_.size());
      b = absl::Uniform<size_t>(gen, 0, accounts_.size() - 1);
      if (b >= a) ++b;
      amount = absl::Uniform<int64_t>(gen, 1, 50);
    }
    const int64_t seq = ++book.seq;
    const absl::Time start = absl::Now();
    {
      MutexLock lock(&mu_);
      rounds_[c].in_flight_since = start;
      rounds_[c].in_flight = absl::StrCat("transfer ", seq, " between accounts ", a, " and ", b);
    }
    std::optional<absl::Status> s = ReadModifyWrite(
        member_, c, {accounts_[a], accounts_[b]},
        [c, seq, amount](std::vector<Account>& v) {
          v[0].balance -= amount;
          v[1].balance += amount;
          v[0].last[c] = v[1].last[c] = seq;
        },
        kNoCompletion, &abandon_);
    // Aborted (a conflict) and FailedPrecondition are definite: not committed. Anything
    // else (Unavailable "outcome unknown", a timeout, no completion) may have committed.
    const bool committed = s.has_value() && s->ok();
    const bool not_committed =
        s.has_value() && (absl::IsAborted(*s) || absl::IsFailedPrecondition(*s));
    for (size_t i : {a, b}) {
      if (committed) {
        book.acked[i] = seq;
        book.unknown[i].clear();
      } else if (!not_committed) {
        book.unknown[i].insert(seq);
      }
    }
    if (committed) ++book.acked_transfers;
    Note(c, start, a, b, s);
    if (!s.has_value()) return;  // stuck (noted) or abandoned
    retry = !committed;
    if (retry && !absl::IsAborted(*s)) absl::SleepFor(absl::Milliseconds(20));
  }
}

void Load::Note(size_t c, absl::Time start, size_t a, size_t b,
                const std::optional<absl::Status>& s) {
  MutexLock lock(&mu_);
  cv_.SignalAll();  // WaitRecovered looks again once this returns
  Round& r = rounds_[c];
  r.in_flight_since.reset();
  if (!kill_ || start < kill_->at) return;  // before the kill: nothing to measure
  if (!s.has_value()) {
    if (!abandon_.load())
      r.stuck = absl::StrCat(r.in_flight, " did not complete within ", Secs(kNoCompletion));
    return;
  }
  const bool on_primary = kill_->primary.contains(a) || kill_->primary.contains(b);
  const bool on_copies = kill_->affected.contains(a) || kill_->affected.contains(b);
  if (!s->ok()) {
    Failures& f = r.failures[absl::StrCat(
        on_copies ? "on the victim's accounts: " : "on other accounts: ", Kind(*s))];
    if (f.count++ == 0) f.first = start;
    f.last = start;
    f.example = s->ToString();
    return;
  }
  const absl::Time now = absl::Now();
  if (!r.first_commit) r.first_commit = now;
  if (on_primary && !r.first_on_primary) r.first_on_primary = now;
  if ((on_copies || kill_->affected.empty()) && !r.recovered) r.recovered = now;
}

}  // namespace farm::failover_test
