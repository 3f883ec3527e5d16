#include "tx/tx_service.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace farm::tx {
namespace {

void Answer(MsgThread& thread, const Message& message, const absl::Status& status) {
  if (!message.expects_reply()) return;
  (void)(status.ok() ? thread.Reply(message.reply_to, "") : thread.ReplyError(message.reply_to, status));
}

std::string_view View(absl::string_view s) { return std::string_view(s.data(), s.size()); }

}  // namespace

absl::StatusOr<std::unique_ptr<TxService>> TxService::Create(NodeId self, Messenger* messenger,
                                                             Fabric* fabric,
                                                             alloc::Allocator* allocator,
                                                             alloc::AllocService* alloc_service,
                                                             const TxOptions& options) {
  std::unique_ptr<TxService> service(new TxService());
  for (size_t i = 0; i < alloc_service->thread_count(); ++i) {
    ObjectReaderOptions ro = options.reader;
    ro.slot_region = options.reader.slot_region + static_cast<RegionId>(i);
    absl::StatusOr<std::unique_ptr<ObjectReader>> reader =
        ObjectReader::Create(&messenger->thread(i), fabric, allocator, ro);
    if (!reader.ok()) return reader.status();
    service->contexts_.push_back(std::make_unique<ThreadContext>(
        self, &messenger->thread(i), alloc_service->thread(i), &alloc_service->backups(),
        std::move(*reader), options));
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
  auto on_record = [this](auto handle) {
    return [this, handle](MsgThread& thread, const Message& message) {
      ThreadContext* ctx = ContextFor(thread, message);
      if (ctx == nullptr) return;
      absl::StatusOr<LogRecord> record = DecodeLogRecord(View(message.payload));
      Answer(thread, message, record.ok() ? handle(*ctx, *record) : record.status());
    };
  };
  if (absl::Status s = messenger->RegisterHandler(
          kTxPrepareMsgId, on_record([](ThreadContext& c, const LogRecord& r) { return c.Prepare(r); }), "tx");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = messenger->RegisterHandler(
          kTxValidateMsgId, on_record([](ThreadContext& c, const LogRecord& r) { return c.Validate(r); }), "tx");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = messenger->RegisterHandler(
          kTxApplyMsgId, on_record([](ThreadContext& c, const LogRecord& r) { return c.ApplyBackup(r); }), "tx");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = messenger->RegisterHandler(
          kTxDecideMsgId,
          [this](MsgThread& thread, const Message& message) {
            ThreadContext* ctx = ContextFor(thread, message);
            if (ctx == nullptr) return;
            absl::StatusOr<TxDecision> d = DecodeDecision(message.payload);
            Answer(thread, message, d.ok() ? ctx->Decide(*d) : d.status());
          },
          "tx");
      !s.ok()) {
    return s;
  }
  auto ship = [this](MsgThread& thread, const Message& message) {
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
    ctx->CommitSingleMachine(std::move(*lock), *reads,
                             [&thread, to = message.reply_to](const absl::Status& s) {
                               (void)(s.ok() ? thread.Reply(to, "") : thread.ReplyError(to, s));
                             });
  };
  return messenger->RegisterHandler(kTxShipMsgId, std::move(ship), "tx");
}

}  // namespace farm::tx
