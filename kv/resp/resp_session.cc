#include "kv/resp/resp_session.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "kv/resp/keyspace_commands.h"
#include "kv/resp/resp_names.h"

namespace farm::kv::resp {
namespace {

constexpr size_t kMinRing = 8;
constexpr size_t kMaxSpareCalls = 16;
// Buffers that grew for a big reply give their memory back once drained.
constexpr size_t kMaxIdleCapacity = 1 << 20;
constexpr size_t kCompactOutputAfter = 64 * 1024;

size_t RoundUpToPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Up to this many keys, a command's keys are compared pair by pair with another's; past
// it they are hashed (one MGET of a million keys against a DEL of as many would compare
// 10^12 pairs, on the worker thread).
constexpr size_t kKeysComparedPairwise = 8;

// The keys of a command being started, to compare with those of the commands in flight.
class StartingKeys {
 public:
  StartingKeys(const CommandSpec& spec, absl::Span<const std::string> args) : spec_(spec), args_(args) {
    ForEachKey(spec, args, [&](const std::string&) { ++count_; });
  }
  bool OverlapWith(const Call& other) {
    bool overlap = false;
    if (count_ <= kKeysComparedPairwise) {
      ForEachKey(spec_, args_, [&](const std::string& a) {
        if (overlap) return;
        ForEachKey(*other.spec, other.args(), [&](const std::string& k) {
          if (!overlap && k == a) overlap = true;
        });
      });
      return overlap;
    }
    if (hashed_.empty()) {
      hashed_.reserve(count_);
      ForEachKey(spec_, args_, [&](const std::string& k) { hashed_.insert(k); });
    }
    ForEachKey(*other.spec, other.args(), [&](const std::string& k) {
      if (!overlap && hashed_.contains(k)) overlap = true;
    });
    return overlap;
  }

 private:
  const CommandSpec& spec_;
  const absl::Span<const std::string> args_;
  size_t count_ = 0;
  absl::flat_hash_set<absl::string_view> hashed_;  // built at the first comparison
};

RespParserLimits InitialLimits(const RespSessionOptions& options) {
  return options.password.empty() ? options.parser_limits
                                  : UnauthenticatedLimits(options.parser_limits);
}

}  // namespace

std::shared_ptr<RespSession> RespSession::Create(Store* store, RespSessionOptions options) {
  return std::shared_ptr<RespSession>(new RespSession(store, std::move(options)));
}

RespSession::RespSession(Store* store, RespSessionOptions options)
    : store_(store),
      options_(std::move(options)),
      combiner_(options_.write_combiner != nullptr
                    ? options_.write_combiner
                    : WriteCombiner::Create(store, options_.max_txn_attempts)),
      data_env_{store, store->limits(), options_.max_txn_attempts, combiner_.get()},
      local_env_{options_.password, options_.port, options_.max_clients,
                 options_.parser_limits.max_bulk_bytes},
      info_env_{options_.counters, options_.port, options_.max_clients},
      store_ops_(std::make_shared<SessionOps>(store)),
      parser_(InitialLimits(options_)) {
  state_.id = options_.client_id;
  state_.authenticated = options_.password.empty();
  ring_.resize(kMinRing);
}

RespSession::~RespSession() = default;

// ---------------------------------------------------------------------------------------
// Input and output.

void RespSession::Feed(absl::string_view bytes) {
  if (closing_ || input_ended_) return;
  ++api_depth_;
  parser_.Feed(bytes);
  Pump();
  --api_depth_;
}

void RespSession::EndOfInput() {
  if (input_ended_) return;
  ++api_depth_;
  input_ended_ = true;
  Pump();
  --api_depth_;
}

void RespSession::ConsumeOutput(size_t n) {
  ++api_depth_;
  output_pos_ += std::min(n, output_.size() - output_pos_);
  if (output_pos_ == output_.size()) {
    output_.clear();
    output_pos_ = 0;
    if (output_.capacity() > kMaxIdleCapacity) std::string().swap(output_);
  } else if (output_pos_ >= kCompactOutputAfter && output_pos_ * 2 >= output_.size()) {
    output_.erase(0, output_pos_);
    output_pos_ = 0;
  }
  if (stall_ == Stall::kOutputFull) Pump();
  --api_depth_;
}

// ---------------------------------------------------------------------------------------
// Starting commands.

void RespSession::Pump() {
  if (pumping_) return;  // a command completed inside Start: the loop below goes on
  pumping_ = true;
  store_ops_->batch().Begin();  // invariant 6
  for (;;) {
    if (closing_) {
      stall_ = Stall::kClosed;
      break;
    }
    if (!parked_) {
      if (output_.size() - output_pos_ >= options_.max_output_bytes) {
        stall_ = Stall::kOutputFull;
        break;
      }
      const RespParser::Result r = parser_.Parse();
      if (r == RespParser::Result::kNeedMore) {
        stall_ = Stall::kNeedInput;
        break;
      }
      if (r == RespParser::Result::kError) {
        ProtocolError();
        continue;
      }
      parked_ = true;
      parked_spec_ = FindCommand(parser_.args()[0]);
      if (parked_spec_ == nullptr && options_.extension != nullptr &&
          options_.extension->Handles(parser_.args()[0])) {
        parked_spec_ = &ExtensionCommandSpec();
      }
    }
    if (!TryStart()) {
      stall_ = Stall::kBlocked;
      break;
    }
    parked_ = false;
  }
  pumping_ = false;
  store_ops_->batch().Flush();
  MaybeFinishInput();
}

void RespSession::MaybeFinishInput() {
  if (input_ended_ && !closing_ && stall_ == Stall::kNeedInput && head_ == tail_) {
    closing_ = true;
    stall_ = Stall::kClosed;
    close_requested_ = true;
  }
}

bool RespSession::TryStart() {
  const size_t max_slots = std::max<size_t>(1, options_.max_in_flight);
  if (tail_ - head_ >= max_slots || exclusive_running_) return false;
  const absl::Span<const std::string> args = parser_.args();
  const CommandSpec* spec = parked_spec_;
  if (spec == nullptr) {
    Reject(UnknownCommandMessage(args));
    return true;
  }
  if (!ArityOk(*spec, args.size())) {
    Reject(ArityMessage(spec->name));
    return true;
  }
  if (!state_.authenticated && !spec->allowed_before_auth) {
    Reject("NOAUTH Authentication required.");
    return true;
  }
  if (in_multi_ && spec->id == CommandId::kExtension) {
    Reject(absl::StrCat("ERR ", absl::AsciiStrToUpper(args[0]), " is a ", options_.extension->service(),
                        " command: it cannot be queued in MULTI"));
    return true;
  }
  if (in_multi_ && IsKeyspaceCommand(spec->id)) {
    // A flush is not one atomic step here, and a scan would not see the transaction's
    // own writes (Redis's would).
    Reject(absl::StrCat("ERR ", absl::AsciiStrToUpper(args[0]), " cannot be queued in MULTI"));
    return true;
  }
  if (in_multi_ && !spec->not_queued) {
    Queue(*spec);
    return true;
  }
  switch (spec->access) {
    case Access::kExclusive:
      if (in_flight_ > 0) return false;
      break;
    case Access::kRead:
    case Access::kWrite:
      if (Conflicts(*spec, args)) return false;
      break;
    case Access::kLocal:
      break;
  }
  if (options_.counters != nullptr) RespCounters::Add(options_.counters->commands);
  Start(*spec);
  return true;
}

bool RespSession::Conflicts(const CommandSpec& spec, absl::Span<const std::string> args) const {
  const bool combined = WritesThroughCombiner(spec.id);
  StartingKeys keys(spec, args);
  for (uint64_t seq = head_; seq < tail_; ++seq) {
    const Slot& slot = ring_[seq & (ring_.size() - 1)];
    if (slot.done || slot.call == nullptr) continue;
    if (slot.access != Access::kRead && slot.access != Access::kWrite) continue;
    if (spec.access == Access::kRead && slot.access == Access::kRead) continue;
    // The combiner orders a key's writes (invariant 2).
    if (combined && WritesThroughCombiner(slot.call->spec->id)) continue;
    if (keys.OverlapWith(*slot.call)) return true;
  }
  return false;
}

void RespSession::Reject(std::string message) {
  if (options_.counters != nullptr) RespCounters::Add(options_.counters->commands);
  if (in_multi_) multi_failed_ = true;
  ReplyNow(ErrorReply(message));
}

void RespSession::Start(const CommandSpec& spec) {
  switch (spec.id) {
    case CommandId::kQuit:
      closing_ = true;
      ReplyNow(SimpleStringReply("OK"), /*close_after=*/true);
      return;
    case CommandId::kMulti:
      if (in_multi_) return ReplyNow(ErrorReply("ERR MULTI calls can not be nested"));
      in_multi_ = true;
      return ReplyNow(SimpleStringReply("OK"));
    case CommandId::kExec:
      return StartExec(spec);
    case CommandId::kDiscard:
      if (!in_multi_) return ReplyNow(ErrorReply("ERR DISCARD without MULTI"));
      ResetMulti();
      Unwatch();
      return ReplyNow(SimpleStringReply("OK"));
    case CommandId::kWatch:
      return StartWatch(spec);
    case CommandId::kUnwatch:
      Unwatch();
      return ReplyNow(SimpleStringReply("OK"));
    case CommandId::kDbSize:
      return StartAsync(
          spec, Access::kExclusive, true,
          [this](std::shared_ptr<Call>, ReplyDone done) { RunDbSize(store_, std::move(done)); });
    case CommandId::kExtension:
      return StartAsync(spec, Access::kExclusive, true, [this](std::shared_ptr<Call> call, ReplyDone done) {
        options_.extension->Run(options_.thread, options_.client_id,
                               absl::MakeSpan(call->argv.data(), call->argc), std::move(done));
      });
    case CommandId::kInfo:
      return StartAsync(spec, Access::kExclusive, true,
                        [this](std::shared_ptr<Call> call, ReplyDone done) {
                          RunInfo(store_, info_env_, call->args(), std::move(done));
                        });
    case CommandId::kScan:
    case CommandId::kKeys:
    case CommandId::kFlushAll:
    case CommandId::kFlushDb:
      return StartAsync(spec, Access::kExclusive, true, [this](std::shared_ptr<Call> call, ReplyDone done) {
        RunKeyspaceCommand(*call, std::move(done));
      });
    default:
      break;
  }
  if (IsDataCommand(spec.id)) {
    return StartAsync(spec, spec.access, false, [this](std::shared_ptr<Call> call, ReplyDone done) {
      RunDataCommand(data_env_, std::move(call), store_ops_, std::move(done));
    });
  }
  // A local command: replies at once.
  RunLocal(spec, parser_.args(), [this](std::string reply) { ReplyNow(std::move(reply)); });
}

void RespSession::RunLocal(const CommandSpec& spec, absl::Span<const std::string> args,
                           ReplyDone done) {
  const bool was_authenticated = state_.authenticated;
  std::string reply = RunLocalCommand(spec, args, local_env_, state_);
  if (!was_authenticated && state_.authenticated) parser_.set_limits(options_.parser_limits);
  done(std::move(reply));
}

void RespSession::RunKeyspaceCommand(const Call& call, ReplyDone done) {
  switch (call.spec->id) {
    case CommandId::kScan:
      return RunScan(store_, call.args(), std::move(done));
    case CommandId::kKeys:
      return RunKeys(store_, call.args(), std::move(done));
    default:
      return RunFlush(store_, call.args(), std::move(done));
  }
}

void RespSession::StartAsync(const CommandSpec& spec, Access access, bool exclusive,
                             absl::AnyInvocable<void(std::shared_ptr<Call>, ReplyDone)> run) {
  const uint64_t seq = NewSlot();
  Slot& slot = SlotAt(seq);
  slot.access = access;
  slot.exclusive = exclusive;
  slot.call = TakeCall(&spec);
  ++in_flight_;
  if (exclusive) exclusive_running_ = true;
  run(slot.call, SlotDone(seq));  // may complete inline (argument errors)
}

std::shared_ptr<Call> RespSession::TakeCall(const CommandSpec* spec) {
  std::shared_ptr<Call> call;
  // A spare call may still be held by the callback that finished it; take a free one.
  for (size_t i = 0; i < spare_calls_.size(); ++i) {
    if (spare_calls_[i].use_count() == 1) {
      call = std::move(spare_calls_[i]);
      spare_calls_[i] = std::move(spare_calls_.back());
      spare_calls_.pop_back();
      break;
    }
  }
  if (call == nullptr) call = std::make_shared<Call>();
  // Swap the strings: the parser gets the call's old storage to reuse.
  const absl::Span<std::string> args = parser_.args();
  call->spec = spec;
  call->argc = args.size();
  if (call->argv.size() < args.size()) call->argv.resize(args.size());
  for (size_t i = 0; i < args.size(); ++i) call->argv[i].swap(args[i]);
  return call;
}

void RespSession::RecycleCall(std::shared_ptr<Call> call) {
  if (call == nullptr || spare_calls_.size() >= kMaxSpareCalls) return;
  size_t capacity = 0;
  for (const std::string& arg : call->argv) capacity += arg.capacity();
  if (capacity > kMaxIdleCapacity) return;  // do not keep big arguments' memory around
  spare_calls_.push_back(std::move(call));
}

void RespSession::ProtocolError() {
  if (options_.counters != nullptr) RespCounters::Add(options_.counters->protocol_errors);
  closing_ = true;
  ReplyNow(ErrorReply(parser_.error()), /*close_after=*/true);
}

// ---------------------------------------------------------------------------------------
// Reply slots.

uint64_t RespSession::NewSlot() {
  if (tail_ - head_ == ring_.size()) {
    std::vector<Slot> bigger(RoundUpToPowerOfTwo(ring_.size() * 2));
    for (uint64_t seq = head_; seq < tail_; ++seq) {
      bigger[seq & (bigger.size() - 1)] = std::move(ring_[seq & (ring_.size() - 1)]);
    }
    ring_.swap(bigger);
  }
  const uint64_t seq = tail_++;
  Slot& slot = SlotAt(seq);
  slot.done = false;
  slot.close_after = false;
  slot.exclusive = false;
  slot.access = Access::kLocal;
  slot.call = nullptr;
  slot.reply.clear();
  return seq;
}

void RespSession::ReplyNow(std::string reply, bool close_after) {
  const uint64_t seq = NewSlot();
  Slot& slot = SlotAt(seq);
  slot.done = true;
  slot.close_after = close_after;
  slot.reply = std::move(reply);
  FlushDone();
}

ReplyDone RespSession::SlotDone(uint64_t seq) {
  return [weak = weak_from_this(), seq](std::string reply) {
    if (std::shared_ptr<RespSession> self = weak.lock()) self->Complete(seq, std::move(reply));
  };
}

void RespSession::Complete(uint64_t seq, std::string reply) {
  Slot& slot = SlotAt(seq);
  slot.reply = std::move(reply);
  slot.done = true;
  --in_flight_;
  if (slot.exclusive) exclusive_running_ = false;
  RecycleCall(std::move(slot.call));
  slot.call = nullptr;
  FlushDone();
  if (pumping_) return;  // completed inside Start; Pump goes on
  Pump();
  // Invariant 5: the last thing done here.
  if (api_depth_ == 0 && on_progress_) on_progress_();
}

void RespSession::FlushDone() {
  while (head_ < tail_ && !close_requested_) {
    Slot& slot = SlotAt(head_);
    if (!slot.done) break;
    if (options_.counters != nullptr && !slot.reply.empty() && slot.reply[0] == '-') {
      RespCounters::Add(options_.counters->error_replies);
    }
    if (output_pos_ == output_.size() && output_.capacity() <= slot.reply.capacity()) {
      output_.clear();
      output_pos_ = 0;
      output_.swap(slot.reply);
    } else {
      output_.append(slot.reply);
    }
    if (slot.reply.capacity() > kMaxIdleCapacity) std::string().swap(slot.reply);
    slot.reply.clear();
    if (slot.close_after) close_requested_ = true;
    ++head_;
  }
}

}  // namespace farm::kv::resp
