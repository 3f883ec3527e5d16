#include "tx/tx_service.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"
#include "farm/base/log.h"
#include "farm/base/status_join.h"

namespace farm::tx {
namespace {

void Answer(MsgThread& thread, const ReplyTo& to, bool expects_reply, const absl::Status& status) {
  if (!expects_reply) return;
  (void)(status.ok() ? thread.Reply(to, "") : thread.ReplyError(to, status));
}

void Answer(MsgThread& thread, const Message& message, const absl::Status& status) {
  Answer(thread, message.reply_to, message.expects_reply(), status);
}

// Answers `message` later (its payload is gone by then: only where to reply is kept).
TxDone AnswerLater(MsgThread& thread, const Message& message) {
  return [&thread, to = message.reply_to, expects = message.expects_reply()](const absl::Status& s) {
    Answer(thread, to, expects, s);
  };
}

std::string_view View(absl::string_view s) { return std::string_view(s.data(), s.size()); }

constexpr absl::Duration kAskAgain = absl::Milliseconds(500);

}  // namespace

absl::StatusOr<std::unique_ptr<TxService>> TxService::Create(NodeId self, Messenger* messenger,
                                                             Fabric* fabric,
                                                             alloc::Allocator* allocator,
                                                             alloc::AllocService* alloc_service,
                                                             const TxOptions& options, TxRecovery recovery) {
  std::unique_ptr<TxService> service(new TxService());
  service->self_ = self;
  service->messenger_ = messenger;
  service->outcomes_ = std::move(recovery.outcomes);
  for (std::string& encoding : recovery.retained) {
    absl::StatusOr<LogRecord> record = DecodeLogRecord(View(encoding));
    if (!record.ok()) return record.status();  // replay decoded it already
    record->kind = LogKind::kCommit;
    service->restart_retained_.push_back(RestartRecord{std::move(encoding), std::move(*record)});
  }
  for (size_t i = 0; i < alloc_service->thread_count(); ++i) {
    ObjectReaderOptions ro = options.reader;
    ro.slot_region = options.reader.slot_region + static_cast<RegionId>(i);
    absl::StatusOr<std::unique_ptr<ObjectReader>> reader =
        ObjectReader::Create(&messenger->thread(i), fabric, allocator, ro);
    if (!reader.ok()) return reader.status();
    service->contexts_.push_back(std::make_unique<ThreadContext>(
        self, &messenger->thread(i), alloc_service->thread(i), &alloc_service->backups(),
        std::move(*reader), options, alloc_service->log(i), recovery.boot));
    service->contexts_.back()->SetShared(&service->recent_commits_, &service->recovery_locks_);
    OneSidedOptions oso;
    oso.slot_region = oso.slot_region + static_cast<RegionId>(i);
    absl::StatusOr<std::unique_ptr<OneSidedAccess>> one_sided = OneSidedAccess::Create(
        &messenger->thread(i), fabric, allocator, &alloc_service->thread(i)->epoch(), oso);
    if (!one_sided.ok()) return one_sided.status();
    service->contexts_.back()->set_one_sided(std::move(*one_sided));
  }
  if (absl::Status s = service->RegisterHandlers(messenger); !s.ok()) return s;
  return service;
}

ThreadContext* TxService::ContextFor(MsgThread& thread, const Message& message) {
  ThreadContext* ctx = contexts_[thread.index()].get();
  if (ctx == nullptr) Answer(thread, message, absl::CancelledError("the node is stopping"));
  return ctx;
}

absl::Status TxService::RegisterHandlers(Messenger* messenger) {
  // A handler of one record, answered through `done` (maybe later).
  auto on_record = [this](auto handle) {
    return [this, handle](MsgThread& thread, const Message& message) {
      ThreadContext* ctx = ContextFor(thread, message);
      if (ctx == nullptr) return;
      absl::StatusOr<LogRecord> record = DecodeLogRecord(View(message.payload));
      if (!record.ok()) return Answer(thread, message, record.status());
      handle(*ctx, *record, message.payload, AnswerLater(thread, message));
    };
  };
  struct Entry {
    MsgId id;
    MessageHandler handler;
  };
  std::vector<Entry> handlers;
  handlers.push_back({kTxPrepareMsgId, [this](MsgThread& thread, const Message& message) {
                        ThreadContext* ctx = ContextFor(thread, message);
                        if (ctx == nullptr) return;
                        absl::StatusOr<PrepareRequest> p = DecodePrepare(View(message.payload));
                        if (!p.ok()) return Answer(thread, message, p.status());
                        ctx->Prepare(p->record, p->participants, message.payload, AnswerLater(thread, message));
                      }});
  handlers.push_back({kTxValidateMsgId, on_record([](ThreadContext& c, const LogRecord& r, absl::string_view,
                                                    TxDone done) { done(c.Validate(r)); })});
  handlers.push_back({kTxApplyMsgId, [this](MsgThread& thread, const Message& message) {
                        ThreadContext* ctx = ContextFor(thread, message);
                        if (ctx == nullptr) return;
                        ctx->ApplyBackup(message.from, message.from_thread, message.payload,
                                         AnswerLater(thread, message));
                      }});
  handlers.push_back({kTxRetainedMsgId, [this](MsgThread& thread, const Message& message) {
                        if (!message.expects_reply()) return;
                        absl::StatusOr<RetainedQuery> q = DecodeRetainedQuery(message.payload);
                        if (!q.ok()) return Answer(thread, message, q.status());
                        if (fenced_epoch_.load(std::memory_order_acquire) < q->epoch) {
                          return Answer(thread, message, absl::UnavailableError(absl::StrFormat(
                                                             "node %d has not fenced epoch %d yet",
                                                             self_, q->epoch)));
                        }
                        AnswerRetained(thread, message.reply_to, std::move(*q));
                      }});
  handlers.push_back({kTxReconcileMsgId, [this](MsgThread& thread, const Message& message) {
                        absl::StatusOr<ReconcileRequest> r = DecodeReconcile(message.payload);
                        if (!r.ok()) return Answer(thread, message, r.status());
                        // Thread 0 applies it (ApplyRetained's thread), then answers here.
                        auto regions = absl::flat_hash_set<RegionId>(r->regions.begin(), r->regions.end());
                        messenger_->thread(0).loop().Post([this, &thread, to = message.reply_to, from = message.from,
                                                           expects = message.expects_reply(), r = std::move(*r),
                                                           regions = std::move(regions)]() mutable {
                          auto answer = [&thread, to, expects](const absl::Status& s) {
                            thread.loop().Post([&thread, to, expects, s] { Answer(thread, to, expects, s); });
                          };
                          ThreadContext* ctx = contexts_[0].get();
                          if (ctx == nullptr) return answer(absl::CancelledError("the node is stopping"));
                          ctx->ApplyRetained(r.records, regions, [this, answer, from](
                                                                      absl::StatusOr<size_t> n) {
                            if (n.ok() && *n > 0) {
                              FARM_LOG(kInfo, "node %u: %d entries of commit records the restart caught in "
                                       "replication taken from node %d's reconciliation",
                                       self_, *n, from);
                            }
                            answer(n.status());
                          });
                        });
                      }});
  handlers.push_back({kTxDecideMsgId, [this](MsgThread& thread, const Message& message) {
                        ThreadContext* ctx = ContextFor(thread, message);
                        if (ctx == nullptr) return;
                        absl::StatusOr<TxDecision> d = DecodeDecision(message.payload);
                        if (!d.ok()) return Answer(thread, message, d.status());
                        ctx->Decide(*d, AnswerLater(thread, message));
                      }});
  handlers.push_back({kTxShipMsgId, [this](MsgThread& thread, const Message& message) {
                        ThreadContext* ctx = ContextFor(thread, message);
                        if (ctx == nullptr) return;
                        size_t used = 0;
                        absl::StatusOr<LogRecord> lock = DecodeLogRecord(View(message.payload), &used);
                        if (!lock.ok()) return Answer(thread, message, lock.status());
                        absl::StatusOr<LogRecord> reads = DecodeLogRecord(View(message.payload).substr(used));
                        if (!reads.ok()) return Answer(thread, message, reads.status());
                        if (lock->kind != LogKind::kLock || reads->kind != LogKind::kValidate ||
                            reads->transaction != lock->transaction) {
                          return Answer(thread, message,
                                        absl::InvalidArgumentError("a shipped commit is a lock record and its reads"));
                        }
                        ctx->CommitSingleMachine(std::move(*lock), *reads, AnswerLater(thread, message));
                      }});
  handlers.push_back({kTxOutcomeMsgId, [this](MsgThread& thread, const Message& message) {
                        if (!message.expects_reply()) return;
                        absl::StatusOr<std::vector<TxKey>> keys = DecodeOutcomeQuery(message.payload);
                        if (!keys.ok()) return Answer(thread, message, keys.status());
                        std::vector<TxOutcome> answer;
                        answer.reserve(keys->size());
                        for (const TxKey& key : *keys) answer.push_back(OutcomeHere(key));
                        (void)thread.Reply(message.reply_to, EncodeOutcomes(answer));
                      }});
  handlers.push_back({kTxVoteMsgId, [this](MsgThread& thread, const Message& message) {
                        if (!message.expects_reply()) return;
                        absl::StatusOr<VoteQuery> q = DecodeVoteQuery(message.payload);
                        if (!q.ok()) return Answer(thread, message, q.status());
                        if (fenced_epoch_.load(std::memory_order_acquire) < q->epoch) {
                          return Answer(thread, message, absl::UnavailableError(absl::StrFormat(
                                                             "node %d has not fenced epoch %d yet",
                                                             self_, q->epoch)));
                        }
                        std::vector<TxOutcome> answer;
                        answer.reserve(q->transactions.size());
                        for (const TxKey& key : q->transactions) answer.push_back(OutcomeHere(key));
                        (void)thread.Reply(message.reply_to, EncodeOutcomes(answer));
                      }});
  for (Entry& e : handlers) {
    if (absl::Status s = messenger->RegisterHandler(e.id, std::move(e.handler), "tx"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

TxOutcome TxService::OutcomeHere(const TxKey& key) const {
  if (recent_commits_.Contains(key.transaction)) return TxOutcome::kCommitted;
  auto it = outcomes_.find(key);
  return it == outcomes_.end() ? TxOutcome::kUnknown : it->second;
}

// --- Recovery of in-doubt transactions ---

struct Resolution {
  std::vector<TxKey> transactions;
  std::vector<NodeId> ask;      // every other participant of any of them
  std::vector<bool> committed;  // by index: some replica logged a commit
  absl::AnyInvocable<void(const absl::Status&)> done;
  int round = 0;
};

void TxService::ResolveInDoubt(std::vector<InDoubt> in_doubt, absl::AnyInvocable<void(const absl::Status&)> done) {
  ThreadContext* ctx = contexts_[0].get();
  if (ctx == nullptr) return done(absl::CancelledError("the node is stopping"));
  auto resolution = std::make_shared<Resolution>();
  resolution->done = std::move(done);
  for (InDoubt& d : in_doubt) {
    const uint64_t id = d.primary.transaction;
    const uint64_t epoch = d.primary.epoch;
    for (NodeId n : d.participants) {
      if (n != ctx->self() && std::find(resolution->ask.begin(), resolution->ask.end(), n) == resolution->ask.end()) {
        resolution->ask.push_back(n);
      }
    }
    if (absl::Status s = ctx->RestoreInDoubt(std::move(d.primary), std::move(d.backup), d.participants); !s.ok()) {
      return resolution->done(absl::Status(
          s.code(), absl::StrFormat("transaction %x in doubt cannot be restored: %s", id, s.message())));
    }
    resolution->transactions.push_back(TxKey{id, epoch});
  }
  if (resolution->transactions.empty()) return resolution->done(absl::OkStatus());
  resolution->committed.assign(resolution->transactions.size(), false);
  FARM_LOG(kInfo, "node %u: %d transactions in doubt after restart; asking the other members",
           ctx->self(), resolution->transactions.size());
  AskOutcomes(std::move(resolution));
}

void TxService::AskOutcomes(std::shared_ptr<Resolution> resolution) {
  ThreadContext* ctx = contexts_[0].get();
  if (ctx == nullptr) return resolution->done(absl::CancelledError("the node is stopping"));
  const std::vector<NodeId>& ask = resolution->ask;
  struct Round {
    size_t outstanding;
    bool failed = false;
  };
  // One query per member and chunk of at most kMaxOutcomeQuery transactions.
  const size_t total = resolution->transactions.size();
  const size_t chunks = (total + kMaxOutcomeQuery - 1) / kMaxOutcomeQuery;
  auto round = std::make_shared<Round>(Round{ask.size() * chunks});
  auto finished = [this, resolution, round] {
    if (!round->failed) return Settle(resolution);
    ThreadContext* ctx = contexts_[0].get();
    if (ctx == nullptr) return resolution->done(absl::CancelledError("the node is stopping"));
    ++resolution->round;
    ctx->loop().RunAfter(kAskAgain, [this, resolution] { AskOutcomes(resolution); });
  };
  if (ask.empty()) return finished();
  for (size_t first = 0; first < total; first += kMaxOutcomeQuery) {
    const size_t count = std::min<size_t>(kMaxOutcomeQuery, total - first);
    const std::string query = EncodeOutcomeQuery(
        std::vector<TxKey>(resolution->transactions.begin() + first, resolution->transactions.begin() + first + count));
    for (NodeId n : ask) {
      auto answered = [resolution, round, finished, n, first, count](const absl::Status& s, absl::string_view reply) {
        absl::StatusOr<std::vector<TxOutcome>> outcomes =
            s.ok() ? DecodeOutcomes(reply, count) : absl::StatusOr<std::vector<TxOutcome>>(s);
        if (!outcomes.ok()) {
          if (resolution->round % 20 == 0) {
            FARM_LOG(kWarning, "in-doubt recovery: node %d did not answer (asking again): %s", n,
                     outcomes.status().ToString());
          }
          round->failed = true;
        } else {
          for (size_t i = 0; i < count; ++i) {
            if ((*outcomes)[i] == TxOutcome::kCommitted) resolution->committed[first + i] = true;
          }
        }
        if (--round->outstanding == 0) finished();
      };
      absl::Status sent = ctx->msg().Call(n, kTxOutcomeMsgId, query, answered, ctx->options().rpc_timeout);
      if (!sent.ok()) answered(sent, "");
    }
  }
}

void TxService::Settle(std::shared_ptr<Resolution> resolution) {
  ThreadContext* ctx = contexts_[0].get();
  if (ctx == nullptr) return resolution->done(absl::CancelledError("the node is stopping"));
  size_t committed = 0;
  auto all = StatusJoin::Create(static_cast<int>(resolution->transactions.size()),
                                [resolution](const absl::Status& s) { resolution->done(s); });
  for (size_t i = 0; i < resolution->transactions.size(); ++i) {
    const uint64_t id = resolution->transactions[i].transaction;
    if (!resolution->committed[i]) {
      ctx->Decide(TxDecision{Decision::kAbort, id}, StatusJoin::Part(all));
      continue;
    }
    ++committed;
    // Its backup copies, then its objects here (either part may be empty: NotFound).
    ctx->Decide(TxDecision{Decision::kCommitBackup, id}, [ctx, id, part = StatusJoin::Part(all)](
                                                              const absl::Status& backup) mutable {
      if (!backup.ok() && !absl::IsNotFound(backup)) return part(backup);
      ctx->Decide(TxDecision{Decision::kCommitPrimary, id}, [part = std::move(part)](const absl::Status& s) mutable {
        part(absl::IsNotFound(s) ? absl::OkStatus() : s);
      });
    });
  }
  FARM_LOG(kInfo, "node %u: in-doubt transactions settled: %d committed, %d aborted", ctx->self(), committed,
           resolution->transactions.size() - committed);
}

}  // namespace farm::tx
