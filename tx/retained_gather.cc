// TxService's side of finishing half-replicated single-machine commits at failover and
// restart (retained_commits.h): answering kTxRetainedMsgId from every thread's retained
// records and those the log kept at restart, at a new primary collecting them from the
// survivors and applying them, and at a restarted primary sending them to its backups.
#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/mutex.h"
#include "tx/tx_service.h"

namespace farm::tx {

namespace {

bool Touches(const LogRecord& record, const absl::flat_hash_set<RegionId>& regions) {
  return std::any_of(record.entries.begin(), record.entries.end(),
                     [&](const LogEntry& e) { return regions.contains(e.address.region()); });
}

}  // namespace

void TxService::AnswerRetained(MsgThread& thread, ReplyTo reply_to, RetainedQuery query) {
  // Every thread encodes its matches; they meet on `thread`, which replies.
  struct Fan {
    size_t left = 0;
    std::vector<std::vector<std::string>> per_thread;
  };
  const size_t threads = contexts_.size();
  auto fan = std::make_shared<Fan>();
  fan->left = threads;
  fan->per_thread.resize(threads);
  auto regions = std::make_shared<const absl::flat_hash_set<RegionId>>(query.regions.begin(), query.regions.end());
  MsgThread* answering = &thread;
  const uint32_t first = query.first;
  auto reply = [this, answering, reply_to, first, fan, regions] {
    std::vector<const std::string*> all;
    for (const std::vector<std::string>& records : fan->per_thread) {
      for (const std::string& r : records) all.push_back(&r);
    }
    for (const RestartRecord& r : restart_retained_) {
      if (Touches(r.record, *regions)) all.push_back(&r.encoding);
    }
    std::string page;
    uint16_t count = 0;
    for (size_t i = first; i < all.size() && count < 0xFFFF; ++i) {
      if (count > 0 && page.size() + all[i]->size() > kMaxRetainedAnswerBytes) break;
      page += *all[i];
      ++count;
    }
    (void)answering->Reply(reply_to, EncodeRetainedPage(static_cast<uint32_t>(all.size()), count, page));
  };
  for (size_t t = 0; t < threads; ++t) {
    messenger_->thread(t).loop().Post([this, t, regions, fan, answering, reply] {
      std::vector<std::string> encoded;
      if (ThreadContext* ctx = contexts_[t].get()) {
        for (absl::string_view r : ctx->RetainedTouching(*regions)) encoded.emplace_back(r);
      }
      answering->loop().Post([t, fan, reply, encoded = std::move(encoded)]() mutable {
        fan->per_thread[t] = std::move(encoded);
        if (--fan->left == 0) reply();
      });
    });
  }
}

namespace {

// One answer awaited by a blocked thread; shared with the callback, which may come
// after the wait gave up.
template <typename T>
struct Awaited {
  Mutex mu;
  absl::StatusOr<T> result ABSL_GUARDED_BY(mu) = absl::UnknownError("no answer");
  Notification done;

  void Set(absl::StatusOr<T> r) {
    {
      MutexLock lock(&mu);
      result = std::move(r);
    }
    done.Notify();
  }
  // The answer, or Unavailable after `timeout`; errors begin with `what`.
  absl::StatusOr<T> Wait(absl::Duration timeout, absl::string_view what) {
    if (!done.WaitForNotificationWithTimeout(timeout)) {
      return absl::UnavailableError(absl::StrFormat("%s: no answer in %s", what, absl::FormatDuration(timeout)));
    }
    MutexLock lock(&mu);
    if (!result.ok()) return absl::Status(result.status().code(), absl::StrCat(what, ": ", result.status().message()));
    return std::move(result);
  }
};

// Calls `node` with `request` from `thread`'s loop and waits for the reply, decoded by
// `decode` (from a thread that is not a worker: it blocks). Errors name `what`.
template <typename T, typename Decode>
absl::StatusOr<T> CallAndWait(MsgThread& thread, NodeId node, MsgId id, std::string request, absl::Duration timeout,
                              Decode decode, absl::string_view what) {
  auto awaited = std::make_shared<Awaited<T>>();
  thread.loop().Post([&thread, node, id, awaited, request = std::move(request), timeout, decode] {
    absl::Status sent = thread.Call(
        node, id, request,
        [awaited, decode](const absl::Status& s, absl::string_view reply) {
          awaited->Set(s.ok() ? decode(reply) : absl::StatusOr<T>(s));
        },
        timeout);
    if (!sent.ok()) awaited->Set(sent);
  });
  return awaited->Wait(timeout + absl::Seconds(1), what);
}

}  // namespace

absl::StatusOr<std::vector<LogRecord>> TxService::CollectRetained(const std::vector<NodeId>& nodes, uint64_t epoch,
                                                                  const std::vector<RegionId>& regions,
                                                                  absl::Duration timeout) {
  std::vector<LogRecord> records;
  for (NodeId node : nodes) {
    RetainedQuery query;
    query.epoch = epoch;
    query.regions = regions;
    for (;;) {
      absl::StatusOr<std::string> request = EncodeRetainedQuery(query);
      if (!request.ok()) return request.status();
      absl::StatusOr<RetainedPage> page = CallAndWait<RetainedPage>(
          messenger_->thread(0), node, kTxRetainedMsgId, std::move(*request), timeout,
          [](absl::string_view reply) { return DecodeRetainedPage(reply); },
          absl::StrFormat("node %d's retained commit records", node));
      if (!page.ok()) return page.status();
      query.first += static_cast<uint32_t>(page->records.size());
      for (LogRecord& r : page->records) records.push_back(std::move(r));
      if (query.first >= page->total || page->records.empty()) break;
    }
  }
  return records;
}

std::vector<LogRecord> TxService::RestartRetained(const std::vector<RegionId>& regions) const {
  const absl::flat_hash_set<RegionId> in(regions.begin(), regions.end());
  std::vector<LogRecord> out;
  for (const RestartRecord& r : restart_retained_) {
    if (Touches(r.record, in)) out.push_back(r.record);
  }
  return out;
}

absl::Status TxService::PushRetained(NodeId node, const std::vector<LogRecord>& records,
                                     const std::vector<RegionId>& regions, absl::Duration timeout) {
  const absl::flat_hash_set<RegionId> asked(regions.begin(), regions.end());
  for (size_t next = 0; next < records.size();) {
    // A page of records, with the regions of `regions` they write: a record had room in
    // a kTxApplyMsgId request, so it has in this one beside a few region ids.
    std::string page;
    uint16_t count = 0;
    std::vector<RegionId> touched;
    for (; next < records.size() && count < 0xFFFF; ++next, ++count) {
      std::string encoded;
      if (absl::Status s = EncodeLogRecord(records[next], &encoded); !s.ok()) return s;
      if (count > 0 && page.size() + encoded.size() > kMaxRetainedAnswerBytes) break;
      page += encoded;
      for (const LogEntry& e : records[next].entries) {
        const RegionId r = e.address.region();
        if (asked.contains(r) && std::find(touched.begin(), touched.end(), r) == touched.end()) touched.push_back(r);
      }
    }
    absl::StatusOr<std::string> request = EncodeReconcile(touched, count, page);
    if (!request.ok()) return request.status();
    absl::StatusOr<bool> taken = CallAndWait<bool>(
        messenger_->thread(0), node, kTxReconcileMsgId, std::move(*request), timeout,
        [](absl::string_view) { return absl::StatusOr<bool>(true); },
        absl::StrFormat("node %d taking the commit records to reconcile", node));
    if (!taken.ok()) return taken.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> TxService::ApplyRetained(const std::vector<LogRecord>& records,
                                                const std::vector<RegionId>& regions, absl::Duration timeout) {
  auto awaited = std::make_shared<Awaited<size_t>>();
  auto shared = std::make_shared<const std::vector<LogRecord>>(records);
  auto in = std::make_shared<const absl::flat_hash_set<RegionId>>(regions.begin(), regions.end());
  messenger_->thread(0).loop().Post([this, awaited, shared, in] {
    ThreadContext* ctx = contexts_[0].get();
    if (ctx == nullptr) return awaited->Set(absl::CancelledError("the node is stopping"));
    ctx->ApplyRetained(*shared, *in, [awaited](absl::StatusOr<size_t> n) { awaited->Set(std::move(n)); });
  });
  return awaited->Wait(timeout, "applying retained commit records");
}

}  // namespace farm::tx
