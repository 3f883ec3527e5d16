#include "alloc/alloc_service.h"

#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc/copy_messages.h"
#include "alloc/durable_records.h"
#include "alloc/end_of_epoch.h"
#include "alloc/messages.h"
#include "farm/base/status_join.h"
#include "farm/base/wire.h"
#include "farm/msg/call_all.h"

namespace farm::alloc {
namespace {

// --- Wire format (farm/base/wire.h): the tag byte, then fixed little-endian fields. ---

// A message's writer, its tag written.
class TaggedWriter : public WireWriter {
 public:
  TaggedWriter() { Put(kAllocWireFormat); }
};

// A message's reader; Tag() checks and consumes the tag (false for another one or an
// empty payload).
class TaggedReader : public WireReader {
 public:
  using WireReader::WireReader;
  bool Tag() {
    uint8_t tag = 0;
    return Get(&tag) && tag == kAllocWireFormat;
  }
};

absl::Status Malformed(absl::string_view what, const Message& m) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "malformed %s request from node %d (%d bytes)", what, m.from, m.payload.size()));
}

std::string EncodeFatPtr(FatPtr p) {
  return TaggedWriter().Put(p.addr.raw()).Put(p.size).Put(p.incarnation).Take();
}

bool DecodeFatPtr(WireReader& r, FatPtr* p) {
  uint64_t raw = 0;
  if (!r.Get(&raw) || !r.Get(&p->size) || !r.Get(&p->incarnation)) return false;
  p->addr = Addr::FromRaw(raw);
  return true;
}

// Answers a request that carries no data back: the tag alone, or the error.
void Answer(MsgThread& thread, const Message& message, const absl::Status& status) {
  if (!message.expects_reply()) return;
  if (status.ok()) {
    (void)thread.Reply(message.reply_to, TaggedWriter().Take());
  } else {
    (void)thread.ReplyError(message.reply_to, status);
  }
}

// The message to answer later: its payload (in the receive ring) is gone by then.
Message ToAnswerLater(const Message& m) {
  Message later = m;
  later.payload = {};
  return later;
}

absl::Status TagOnlyAnswer(absl::string_view payload) {
  TaggedReader r(payload);
  return r.Tag() && r.done() ? absl::OkStatus()
                             : absl::InternalError("malformed allocation-protocol answer");
}

}  // namespace

// --- MsgChannel ---

void MsgChannel::FanOut(std::span<const NodeId> nodes, MsgId id, std::string payload,
                        StatusDone done) {
  std::vector<NodeRequest> requests;
  requests.reserve(nodes.size());
  for (NodeId node : nodes) requests.push_back(NodeRequest{node, payload});
  CallAll(*thread_, id, std::move(requests), std::move(done), absl::ZeroDuration(), TagOnlyAnswer);
}

void RequestRegionCapability(MsgThread& thread, NodeId primary, RegionId region,
                             absl::AnyInvocable<void(absl::StatusOr<RegionCapability>)> done) {
  auto shared = std::make_shared<absl::AnyInvocable<void(absl::StatusOr<RegionCapability>)>>(
      std::move(done));
  absl::Status sent = thread.Call(
      primary, kRegionCapabilityMsgId, TaggedWriter().Put(region).Take(),
      [shared, primary, region](const absl::Status& s, absl::string_view reply) {
        if (!s.ok()) {
          (*shared)(absl::Status(s.code(), absl::StrCat("capability of region ", region, " from node ",
                                                        primary, ": ", s.message())));
          return;
        }
        TaggedReader r(reply);
        RegionCapability cap;
        if (!r.Tag() || !r.Get(&cap.region) || !r.Get(&cap.reserved) || !r.Get(&cap.length) ||
            !r.Get(&cap.rkey) || !r.Get(&cap.remote_base) || !r.done() || cap.region != region) {
          (*shared)(absl::InternalError(absl::StrCat("malformed capability answer from node ", primary)));
          return;
        }
        (*shared)(cap);
      });
  if (!sent.ok()) (*shared)(sent);
}

void MsgChannel::ReplicateRegion(std::span<const NodeId> backups, RegionId region, uint64_t bytes,
                                 StatusDone done) {
  // The primary's own copy is durable like the backups': in parallel with them.
  auto join = StatusJoin::Create(2, std::move(done));
  log_->Append(storage::NodeLogType::kRegionCreated, EncodeRegionCreated({region, bytes, self_}),
               StatusJoin::Part(join));
  FanOut(backups, kBackupRegionMsgId, TaggedWriter().Put(region).Put(bytes).Take(), StatusJoin::Part(join));
}

void MsgChannel::ReplicateBlockWords(std::span<const NodeId> backups, RegionId region,
                                     uint32_t first_unit, std::span<const uint64_t> words,
                                     StatusDone done) {
  // The wire payload is the log record (durable_records.h): one encoding for both.
  std::string payload = EncodeBlockWords(region, first_unit, words.data(), words.size());
  auto join = StatusJoin::Create(2, std::move(done));
  log_->Append(storage::NodeLogType::kBlockWords, payload, StatusJoin::Part(join));
  FanOut(backups, kBlockStateMsgId, std::move(payload), StatusJoin::Part(join));
}

void MsgChannel::AllocateRemote(NodeId primary, uint32_t payload, Addr hint, PtrDone done) {
  auto shared = std::make_shared<PtrDone>(std::move(done));
  absl::Status sent = thread_->Call(
      primary, kRemoteAllocMsgId, TaggedWriter().Put(payload).Put(hint.raw()).Take(),
      [shared, primary](const absl::Status& s, absl::string_view reply) {
        if (!s.ok()) {
          (*shared)(absl::Status(s.code(), absl::StrCat("allocating on node ", primary, ": ", s.message())));
          return;
        }
        TaggedReader r(reply);
        FatPtr p;
        if (!r.Tag() || !DecodeFatPtr(r, &p) || !r.done()) {
          (*shared)(absl::InternalError(absl::StrCat("malformed allocation answer from node ", primary)));
          return;
        }
        (*shared)(p);
      });
  if (!sent.ok()) (*shared)(sent);
}

void MsgChannel::FreeRemote(NodeId primary, FatPtr object, StatusDone done) {
  auto shared = std::make_shared<StatusDone>(std::move(done));
  absl::Status sent = thread_->Call(primary, kRemoteFreeMsgId, EncodeFatPtr(object),
                                    [shared](const absl::Status& s, absl::string_view reply) {
                                      (*shared)(s.ok() ? TagOnlyAnswer(reply) : s);
                                    });
  if (!sent.ok()) (*shared)(sent);
}

void MsgChannel::EndOfEpochRound(std::vector<NodeId> members, StatusDone done) {
  RunEndOfEpochRound(*thread_, self_, *epochs_, std::move(members),
                     [done = std::move(done)](absl::Status s) mutable { done(s); });
}

// --- AllocService ---

absl::StatusOr<std::unique_ptr<AllocService>> AllocService::Create(Messenger* messenger, Allocator* allocator,
                                                                   BackupRegions* backups, storage::RecordLog* log,
                                                                   uint64_t max_unlogged_copy_bytes) {
  std::unique_ptr<AllocService> service(new AllocService(messenger, allocator, backups, max_unlogged_copy_bytes));
  if (absl::Status s = service->RegisterHandlers(); !s.ok()) return s;
  for (size_t i = 0; i < messenger->thread_count(); ++i) {
    service->logs_.push_back(std::make_unique<ThreadLog>(log, &messenger->thread(i).loop()));
    service->channels_.push_back(std::make_unique<MsgChannel>(
        &messenger->thread(i), messenger->node_id(), &allocator->epochs(), service->logs_.back().get()));
    absl::StatusOr<std::unique_ptr<ThreadAllocator>> t =
        allocator->NewThread(service->channels_.back().get());
    if (!t.ok()) return t.status();
    service->threads_.push_back(std::move(*t));
  }
  return service;
}

AllocService::~AllocService() {
  threads_.clear();  // before the channels they send through
  channels_.clear();
}

absl::Status AllocService::RegisterHandlers() {
  struct Entry {
    MsgId id;
    void (AllocService::*handler)(MsgThread&, const Message&);
  };
  for (const Entry& e : {Entry{kRemoteAllocMsgId, &AllocService::OnRemoteAlloc},
                         Entry{kRemoteFreeMsgId, &AllocService::OnRemoteFree},
                         Entry{kBackupRegionMsgId, &AllocService::OnBackupRegion},
                         Entry{kBlockStateMsgId, &AllocService::OnBlockState},
                         Entry{kRegionCapabilityMsgId, &AllocService::OnRegionCapability},
                         Entry{kRegionCopyBeginMsgId, &AllocService::OnCopyBegin},
                         Entry{kRegionCopyDataMsgId, &AllocService::OnCopyData},
                         Entry{kRegionCopyEndMsgId, &AllocService::OnCopyEnd}}) {
    auto handler = e.handler;
    if (absl::Status s = messenger_->RegisterHandler(
            e.id, [this, handler](MsgThread& t, const Message& m) { (this->*handler)(t, m); }, "alloc");
        !s.ok()) {
      return s;
    }
  }
  return RegisterEndOfEpochHandler(*messenger_, allocator_->epochs());
}

absl::Status AllocService::NotHeld(RegionId region, absl::Status otherwise) const {
  // Only once its copy began arriving: an address in no region stays NotFound.
  if (backups_->Find(region) == nullptr) return otherwise;
  std::shared_ptr<const membership::Placement> placement = allocator_->environment().placement();
  if (placement == nullptr) return otherwise;
  absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(region);
  if (!rs.ok() || rs->primary() != messenger_->node_id()) return otherwise;
  return absl::UnavailableError(absl::StrFormat(
      "node %d is becoming the primary of region %d (its copy is on the way): try again", messenger_->node_id(),
      region));
}

void AllocService::OnRemoteAlloc(MsgThread& thread, const Message& message) {
  if (!message.expects_reply()) return;
  TaggedReader r(message.payload);
  uint32_t payload = 0;
  uint64_t hint = 0;
  if (!r.Tag() || !r.Get(&payload) || !r.Get(&hint) || !r.done()) {
    (void)thread.ReplyError(message.reply_to, Malformed("allocation", message));
    return;
  }
  const Addr at = Addr::FromRaw(hint);
  if (allocator_->blocks().FindRegion(at.region()) == nullptr) {
    // Never forwarded again: two nodes with different configurations must not bounce
    // the request between them.
    (void)thread.ReplyError(message.reply_to,
                            NotHeld(at.region(), absl::FailedPreconditionError(absl::StrFormat(
                                                     "node %d holds no region %d to allocate near",
                                                     messenger_->node_id(), at.region()))));
    return;
  }
  ThreadAllocator* allocator = threads_[thread.index()].get();
  if (allocator == nullptr) {
    (void)thread.ReplyError(message.reply_to, absl::UnavailableError("the node is stopping"));
    return;
  }
  allocator->Allocate(
      payload, at, [&thread, to = message.reply_to](absl::StatusOr<FatPtr> p) {
        if (p.ok()) {
          (void)thread.Reply(to, EncodeFatPtr(*p));
        } else {
          (void)thread.ReplyError(to, p.status());
        }
      });
}

void AllocService::OnRemoteFree(MsgThread& thread, const Message& message) {
  TaggedReader r(message.payload);
  FatPtr p;
  if (!r.Tag() || !DecodeFatPtr(r, &p) || !r.done()) {
    Answer(thread, message, Malformed("free", message));
    return;
  }
  ThreadAllocator* allocator = threads_[thread.index()].get();
  Answer(thread, message,
         allocator == nullptr ? absl::UnavailableError("the node is stopping") : allocator->FreeLocal(p));
}

void AllocService::OnBackupRegion(MsgThread& thread, const Message& message) {
  TaggedReader r(message.payload);
  RegionId region = 0;
  uint64_t bytes = 0;
  if (!r.Tag() || !r.Get(&region) || !r.Get(&bytes) || !r.done()) {
    return Answer(thread, message, Malformed("backup region", message));
  }
  if (absl::Status s = backups_->Create(region, bytes, message.from); !s.ok()) return Answer(thread, message, s);
  logs_[thread.index()]->Append(storage::NodeLogType::kRegionCreated,
                                EncodeRegionCreated({region, bytes, message.from}),
                                [&thread, m = ToAnswerLater(message)](const absl::Status& s) { Answer(thread, m, s); });
}

void AllocService::OnBlockState(MsgThread& thread, const Message& message) {
  absl::StatusOr<BlockWords> update = DecodeBlockWords(message.payload);
  if (!update.ok()) return Answer(thread, message, Malformed("block state", message));
  if (absl::Status s = backups_->Apply(update->region, update->first_unit, update->words); !s.ok()) {
    if (absl::IsNotFound(s)) {
      // No copy here: after a configuration change the primary may replicate a new block
      // to a backup whose copy is still on its way (re-replication). Retryable: the
      // primary releases the block and its caller tries again.
      s = absl::UnavailableError(absl::StrCat(s.message(), " (yet: its copy may be on the way): try again"));
    }
    return Answer(thread, message, s);
  }
  logs_[thread.index()]->Append(storage::NodeLogType::kBlockWords, message.payload,
                                [&thread, m = ToAnswerLater(message)](const absl::Status& s) { Answer(thread, m, s); });
}

void AllocService::OnRegionCapability(MsgThread& thread, const Message& message) {
  if (!message.expects_reply()) return;
  TaggedReader r(message.payload);
  RegionId region = 0;
  if (!r.Tag() || !r.Get(&region) || !r.done()) {
    (void)thread.ReplyError(message.reply_to, Malformed("region capability", message));
    return;
  }
  const LocalRegion* held = allocator_->blocks().FindRegion(region);
  if (held == nullptr) {
    (void)thread.ReplyError(message.reply_to,
                            NotHeld(region, absl::NotFoundError(absl::StrFormat(
                                                "node %d is not the primary of region %d",
                                                messenger_->node_id(), region))));
    return;
  }
  const RegionCapability& cap = held->capability();
  (void)thread.Reply(message.reply_to, TaggedWriter()
                                           .Put(cap.region)
                                           .Put(cap.reserved)
                                           .Put(cap.length)
                                           .Put(cap.rkey)
                                           .Put(cap.remote_base)
                                           .Take());
}

void AllocService::OnCopyBegin(MsgThread& thread, const Message& message) {
  std::optional<CopyBegin> begin = DecodeCopyBegin(message.payload);
  if (!begin.has_value()) return Answer(thread, message, Malformed("region copy begin", message));
  if (allocator_->blocks().FindRegion(begin->region) != nullptr) {
    return Answer(thread, message, absl::FailedPreconditionError(absl::StrFormat(
        "node %d is the primary of region %d: it takes no copy of it from node %d", messenger_->node_id(),
        begin->region, message.from)));
  }
  auto start = [this, &thread, m = ToAnswerLater(message), begin = *begin](absl::Status admitted) mutable {
    if (!admitted.ok()) return Answer(thread, m, admitted);
    absl::StatusOr<uint64_t> copy = copy_receiver_.Begin(m.from, begin);
    if (!copy.ok()) return Answer(thread, m, copy.status());
    logs_[thread.index()]->Append(
        storage::NodeLogType::kRegionReset,
        EncodeRegionCreated({.region = begin.region, .bytes = begin.bytes, .primary = m.from, .copy = *copy}),
        [this, &thread, m, region = begin.region](const absl::Status& s) {
          if (!s.ok()) copy_receiver_.Abandon(m.from, region);
          Answer(thread, m, s);
        });
  };
  if (!copy_gate_) return start(absl::OkStatus());
  copy_gate_(thread.index(), begin->region, message.from, std::move(start));
}

void AllocService::OnCopyData(MsgThread& thread, const Message& message) {
  absl::StatusOr<RegionImage> chunk = DecodeRegionImage(message.payload);
  if (!chunk.ok()) return Answer(thread, message, Malformed("region copy data", message));
  absl::StatusOr<CopyChunkAccepted> accepted = copy_receiver_.Data(message.from, *chunk);
  if (!accepted.ok()) return Answer(thread, message, accepted.status());
  // The wire payload is the log record (durable_records.h). The chunk is answered now,
  // or once its record is durable when the copy has too much waiting for the log.
  const bool answer_now = !accepted->answer_when_logged;
  std::optional<Message> answer_later;
  if (!answer_now) answer_later = ToAnswerLater(message);
  logs_[thread.index()]->Append(
      storage::NodeLogType::kRegionImage, message.payload,
      [this, &thread, ticket = accepted->ticket, m = std::move(answer_later)](const absl::Status& s) {
        copy_receiver_.Logged(ticket, s);
        if (m.has_value()) Answer(thread, *m, s);
      });
  if (answer_now) Answer(thread, message, absl::OkStatus());
}

void AllocService::OnCopyEnd(MsgThread& thread, const Message& message) {
  std::optional<CopyEnd> end = DecodeCopyEnd(message.payload);
  if (!end.has_value()) return Answer(thread, message, Malformed("region copy end", message));
  // Answered once every DATA's record is durable — maybe later, from the log completion
  // of one (on the thread that received it: this one, as a copy comes on one ring) —
  // and then the copy's kRegionCopied, so that a restart knows the copy whole
  // (node_log_types.h). Without it the replayed copy is partial: never promoted.
  copy_receiver_.End(
      message.from, *end,
      [this, &thread, m = ToAnswerLater(message), region = end->region](absl::Status ended,
                                                                         uint64_t number) mutable {
        if (!ended.ok()) return Answer(thread, m, ended);
        // The copy's number tells this end from another copy's of the sender: another
        // thread may log the reset of the sender's next copy before this record.
        const Region* copy = backups_->Find(region);
        logs_[thread.index()]->Append(
            storage::NodeLogType::kRegionCopied,
            EncodeRegionCreated({.region = region,
                                 .bytes = copy != nullptr ? copy->size() : 0,
                                 .primary = m.from,
                                 .copy = number}),
            [this, &thread, m, region](const absl::Status& logged) {
              if (logged.ok() && on_copy_complete_) on_copy_complete_(region);
              Answer(thread, m, logged);
            });
      });
}

}  // namespace farm::alloc
