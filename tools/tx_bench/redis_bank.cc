#include "tools/tx_bench/redis_bank.h"

#include <hiredis/hiredis.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/random/distributions.h"
#include "absl/random/random.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "tools/common/latency.h"

namespace farm::bench {
namespace {

using Clock = std::chrono::steady_clock;

// A reply or connection that is sure to be freed.
struct ReplyFree {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyFree>;
struct ContextFree {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Connection = std::unique_ptr<redisContext, ContextFree>;

// Bound on connecting and on each read and write, so that a hung server fails the run.
constexpr absl::Duration kIoTimeout = absl::Seconds(5);
// Keys per MSET when loading and per MGET when summing.
constexpr uint32_t kBatch = 1000;

absl::StatusOr<Connection> Connect(uint16_t port) {
  const timeval tv = absl::ToTimeval(kIoTimeout);
  Connection c(redisConnectWithTimeout("127.0.0.1", port, tv));
  if (c == nullptr) return absl::ResourceExhaustedError("hiredis could not allocate a context");
  if (c->err != 0) {
    return absl::UnavailableError(
        absl::StrCat("connecting to redis at 127.0.0.1:", port, ": ", c->errstr));
  }
  if (redisSetTimeout(c.get(), tv) != REDIS_OK) {
    return absl::UnavailableError(absl::StrCat("setting the socket timeout: ", c->errstr));
  }
  return c;
}

// Queues a command in the connection's output buffer; the next ReadReply sends it.
absl::Status Append(redisContext* c, absl::Span<const absl::string_view> args) {
  absl::InlinedVector<const char*, 8> argv;
  absl::InlinedVector<size_t, 8> lengths;
  for (absl::string_view arg : args) {
    argv.push_back(arg.data());
    lengths.push_back(arg.size());
  }
  if (redisAppendCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lengths.data()) !=
      REDIS_OK) {
    return absl::ResourceExhaustedError(
        absl::StrCat("hiredis could not queue ", args.front(), ": ", c->errstr));
  }
  return absl::OkStatus();
}

std::string Describe(const redisReply& r) {
  const absl::string_view text(r.str != nullptr ? r.str : "", r.str != nullptr ? r.len : 0);
  switch (r.type) {
    case REDIS_REPLY_STRING:
      return absl::StrCat("string \"", text, "\"");
    case REDIS_REPLY_STATUS:
      return absl::StrCat("status +", text);
    case REDIS_REPLY_ERROR:
      return absl::StrCat("error -", text);
    case REDIS_REPLY_INTEGER:
      return absl::StrCat("integer ", r.integer);
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_ARRAY:
      return absl::StrCat("array of ", r.elements);
    default:
      return absl::StrCat("reply of type ", r.type);
  }
}

// The next reply, sending whatever is queued first. An error reply is an error.
absl::StatusOr<Reply> ReadReply(redisContext* c, absl::string_view what) {
  void* raw = nullptr;
  if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("redis connection failed awaiting the reply to ", what, ": ", c->errstr));
  }
  Reply reply(static_cast<redisReply*>(raw));
  if (reply->type == REDIS_REPLY_ERROR) {
    return absl::InternalError(absl::StrCat("redis answered ", what, " with ", Describe(*reply)));
  }
  return reply;
}

absl::Status ExpectStatusReply(redisContext* c, absl::string_view what,
                               absl::string_view expected) {
  absl::StatusOr<Reply> reply = ReadReply(c, what);
  if (!reply.ok()) return reply.status();
  const redisReply& r = **reply;
  if (r.type != REDIS_REPLY_STATUS || absl::string_view(r.str, r.len) != expected) {
    return absl::InternalError(
        absl::StrCat("redis answered ", what, " with ", Describe(r), ", expected +", expected));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ParseBalance(const redisReply& r, absl::string_view key) {
  int64_t balance = 0;
  if (r.type != REDIS_REPLY_STRING ||
      !absl::SimpleAtoi(absl::string_view(r.str, r.len), &balance)) {
    return absl::InternalError(absl::StrCat("balance of ", key, " is ", Describe(r)));
  }
  return balance;
}

// The balances of `keys`, in order, by one MGET.
absl::Status ReadBalances(redisContext* c, absl::Span<const absl::string_view> keys,
                          std::vector<int64_t>& out) {
  absl::StatusOr<Reply> reply = ReadReply(c, "MGET");
  if (!reply.ok()) return reply.status();
  const redisReply& r = **reply;
  if (r.type != REDIS_REPLY_ARRAY || r.elements != keys.size()) {
    return absl::InternalError(
        absl::StrCat("redis answered MGET of ", keys.size(), " keys with ", Describe(r)));
  }
  out.clear();
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::StatusOr<int64_t> balance = ParseBalance(*r.element[i], keys[i]);
    if (!balance.ok()) return balance.status();
    out.push_back(*balance);
  }
  return absl::OkStatus();
}

// Sets every account to `balance`, kBatch keys per MSET.
absl::Status LoadAccounts(redisContext* c, const std::vector<std::string>& keys, int64_t balance) {
  const std::string value = absl::StrCat(balance);
  std::vector<absl::string_view> args;
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    const size_t end = std::min(keys.size(), first + kBatch);
    args.assign({"MSET"});
    for (size_t i = first; i < end; ++i) {
      args.push_back(keys[i]);
      args.push_back(value);
    }
    if (absl::Status s = Append(c, args); !s.ok()) return s;
    if (absl::Status s = ExpectStatusReply(c, "MSET", "OK"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// The sum of all balances, kBatch keys per MGET.
absl::StatusOr<int64_t> SumBalances(redisContext* c, const std::vector<std::string>& keys) {
  int64_t total = 0;
  std::vector<absl::string_view> args;
  std::vector<int64_t> balances;
  for (size_t first = 0; first < keys.size(); first += kBatch) {
    const size_t end = std::min(keys.size(), first + kBatch);
    args.assign({"MGET"});
    for (size_t i = first; i < end; ++i) args.push_back(keys[i]);
    if (absl::Status s = Append(c, args); !s.ok()) return s;
    const absl::Span<const absl::string_view> batch_keys(args.data() + 1, end - first);
    if (absl::Status s = ReadBalances(c, batch_keys, balances); !s.ok()) return s;
    for (int64_t b : balances) total += b;
  }
  return total;
}

// One attempt at moving `amount` from a to b: true when EXEC committed it, false when
// EXEC answered nil because a or b changed after the WATCH.
absl::StatusOr<bool> AttemptTransfer(redisContext* c, absl::string_view a, absl::string_view b,
                                     int64_t amount, std::vector<int64_t>& balances) {
  // Round trip 1: WATCH a b; MGET a b.
  const absl::string_view keys[] = {a, b};
  if (absl::Status s = Append(c, {"WATCH", a, b}); !s.ok()) return s;
  if (absl::Status s = Append(c, {"MGET", a, b}); !s.ok()) return s;
  if (absl::Status s = ExpectStatusReply(c, "WATCH", "OK"); !s.ok()) return s;
  if (absl::Status s = ReadBalances(c, keys, balances); !s.ok()) return s;
  // Round trip 2: MULTI; SET a; SET b; EXEC.
  const std::string new_a = absl::StrCat(balances[0] - amount);
  const std::string new_b = absl::StrCat(balances[1] + amount);
  if (absl::Status s = Append(c, {"MULTI"}); !s.ok()) return s;
  if (absl::Status s = Append(c, {"SET", a, new_a}); !s.ok()) return s;
  if (absl::Status s = Append(c, {"SET", b, new_b}); !s.ok()) return s;
  if (absl::Status s = Append(c, {"EXEC"}); !s.ok()) return s;
  if (absl::Status s = ExpectStatusReply(c, "MULTI", "OK"); !s.ok()) return s;
  if (absl::Status s = ExpectStatusReply(c, "SET in MULTI", "QUEUED"); !s.ok()) return s;
  if (absl::Status s = ExpectStatusReply(c, "SET in MULTI", "QUEUED"); !s.ok()) return s;
  absl::StatusOr<Reply> exec = ReadReply(c, "EXEC");
  if (!exec.ok()) return exec.status();
  const redisReply& r = **exec;
  if (r.type == REDIS_REPLY_NIL) return false;
  if (r.type == REDIS_REPLY_ARRAY && r.elements == 2) {
    bool all_ok = true;
    for (size_t i = 0; i < 2; ++i) {
      const redisReply& e = *r.element[i];
      all_ok &= e.type == REDIS_REPLY_STATUS && absl::string_view(e.str, e.len) == "OK";
    }
    if (all_ok) return true;
  }
  return absl::InternalError(absl::StrCat("redis answered EXEC of two SETs with ", Describe(r),
                                          r.type == REDIS_REPLY_ARRAY ? " (not two +OK)" : ""));
}

// What one client thread did.
struct ClientTally {
  uint64_t committed = 0;
  uint64_t aborted = 0;
  std::vector<uint64_t> latencies_ns;  // of committed transfers' final attempts
  absl::Status status;
};

// Transfers until `deadline` or until another client failed (`stop`).
void RunClient(redisContext* c, const std::vector<std::string>& keys, uint64_t seed,
               Clock::time_point deadline, std::atomic<bool>& stop, ClientTally& tally) {
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  absl::BitGen gen(seq);
  const uint32_t n = static_cast<uint32_t>(keys.size());
  std::vector<int64_t> balances;
  while (!stop.load(std::memory_order_relaxed) && Clock::now() < deadline) {
    const uint32_t a = absl::Uniform<uint32_t>(gen, 0, n);
    uint32_t b = absl::Uniform<uint32_t>(gen, 0, n - 1);
    if (b >= a) ++b;  // distinct from a, still uniform
    const int64_t amount = absl::Uniform<int64_t>(absl::IntervalClosed, gen, 1, 10);
    for (;;) {
      const Clock::time_point start = Clock::now();
      absl::StatusOr<bool> committed = AttemptTransfer(c, keys[a], keys[b], amount, balances);
      if (!committed.ok()) {
        tally.status = committed.status();
        stop.store(true, std::memory_order_relaxed);
        return;
      }
      if (*committed) {
        ++tally.committed;
        tally.latencies_ns.push_back(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count()));
        break;
      }
      ++tally.aborted;
      if (stop.load(std::memory_order_relaxed) || Clock::now() >= deadline) return;
    }
  }
}

absl::Status Validate(const RedisBankOptions& options) {
  if (options.port == 0) return absl::InvalidArgumentError("RedisBankOptions.port is 0");
  if (options.accounts < 2) {
    return absl::InvalidArgumentError("a transfer needs at least 2 accounts");
  }
  if (options.clients < 1) return absl::InvalidArgumentError("at least 1 client is needed");
  if (options.duration <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("the duration must be positive");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BankRunResult> RunRedisBank(const RedisBankOptions& options) {
  if (absl::Status s = Validate(options); !s.ok()) return s;
  std::vector<std::string> keys;
  keys.reserve(options.accounts);
  for (uint32_t i = 0; i < options.accounts; ++i) keys.push_back(absl::StrCat("acct:", i));

  BankRunResult result;
  absl::StatusOr<Connection> admin = Connect(options.port);
  if (!admin.ok()) return admin.status();
  if (absl::Status s = LoadAccounts(admin->get(), keys, options.initial_balance); !s.ok()) {
    return s;
  }
  absl::StatusOr<int64_t> before = SumBalances(admin->get(), keys);
  if (!before.ok()) return before.status();
  result.total_before = *before;

  // Connect every client before the clock starts.
  std::vector<Connection> connections;
  for (uint32_t t = 0; t < options.clients; ++t) {
    absl::StatusOr<Connection> c = Connect(options.port);
    if (!c.ok()) return c.status();
    connections.push_back(*std::move(c));
  }
  std::vector<ClientTally> tallies(options.clients);
  std::atomic<bool> stop{false};
  const Clock::time_point start = Clock::now();
  const Clock::time_point deadline = start + absl::ToChronoNanoseconds(options.duration);
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < options.clients; ++t) {
    threads.emplace_back(RunClient, connections[t].get(), std::cref(keys), options.seed + t,
                         deadline, std::ref(stop), std::ref(tallies[t]));
  }
  for (std::thread& thread : threads) thread.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();

  size_t samples = 0;
  for (uint32_t t = 0; t < options.clients; ++t) {
    if (!tallies[t].status.ok()) {
      return absl::Status(tallies[t].status.code(),
                          absl::StrCat("client ", t, ": ", tallies[t].status.message()));
    }
    samples += tallies[t].latencies_ns.size();
  }
  LatencySamples latency(samples);
  for (const ClientTally& tally : tallies) {
    result.committed += tally.committed;
    result.aborted += tally.aborted;
    for (uint64_t ns : tally.latencies_ns) latency.Add(ns);
  }
  result.mean_us = latency.MeanUs();
  result.p50_us = latency.PercentileUs(50);
  result.p99_us = latency.PercentileUs(99);

  absl::StatusOr<int64_t> after = SumBalances(admin->get(), keys);
  if (!after.ok()) return after.status();
  result.total_after = *after;
  if (result.total_after != result.total_before) {
    return absl::InternalError(absl::StrCat("the sum of all balances changed from ",
                                            result.total_before, " to ", result.total_after,
                                            " after ", result.committed, " committed transfers"));
  }
  return result;
}

}  // namespace farm::bench
