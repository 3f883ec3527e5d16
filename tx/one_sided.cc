#include "tx/one_sided.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "alloc/alloc_service.h"
#include "alloc/size_classes.h"
#include "farm/base/cpu_copy.h"
#include "farm/base/object_layout.h"

namespace farm::tx {
namespace {

constexpr uint64_t kLargeSlotBytes = alloc::kMaxSlotBytes;  // holds any object's payload
constexpr int kMaxTornValidations = 16;

const char* KindName(int kind) {
  static constexpr const char* kNames[] = {"rawRead", "rawWrite", "rawCas64", "rawFetchAdd64", "rawFree"};
  return kNames[kind];
}

}  // namespace

absl::StatusOr<std::unique_ptr<OneSidedAccess>> OneSidedAccess::Create(MsgThread* thread, Fabric* fabric,
                                                                       alloc::Allocator* allocator,
                                                                       alloc::EpochParticipant* epoch,
                                                                       const OneSidedOptions& options) {
  if (options.small_slots == 0 || options.large_slots == 0) {
    return absl::InvalidArgumentError("one-sided access needs at least one small and one large slot");
  }
  const uint64_t bytes = uint64_t{options.small_slots} * kSmallSlotBytes + uint64_t{options.large_slots} * kLargeSlotBytes;
  absl::StatusOr<Region> slots = Region::Create(options.slot_region, bytes, RegionOptions{HugePages::kNone});
  if (!slots.ok()) return slots.status();
  auto region = std::make_unique<Region>(std::move(*slots));
  absl::StatusOr<RegisteredRegion> registered = fabric->RegisterRegion(*region);
  if (!registered.ok()) return registered.status();
  return std::unique_ptr<OneSidedAccess>(
      new OneSidedAccess(thread, fabric, allocator, epoch, options, std::move(region), registered->local));
}

OneSidedAccess::OneSidedAccess(MsgThread* thread, Fabric* fabric, alloc::Allocator* allocator,
                               alloc::EpochParticipant* epoch, const OneSidedOptions& options,
                               std::unique_ptr<Region> slots, LocalRegion local)
    : thread_(thread),
      fabric_(fabric),
      allocator_(allocator),
      epoch_(epoch),
      options_(options),
      slots_region_(std::move(slots)),
      slots_(local),
      scratch_(kLargeSlotBytes),
      alive_(std::make_shared<OneSidedAccess*>(this)) {
  for (int i = static_cast<int>(options.small_slots); i > 0; --i) free_small_.push_back(i - 1);
  for (int i = static_cast<int>(options.large_slots); i > 0; --i) {
    free_large_.push_back(static_cast<int>(options.small_slots) + i - 1);
  }
}

OneSidedAccess::~OneSidedAccess() {
  alive_.reset();
  // Ops in flight write into the slots until the fabric revokes them.
  (void)fabric_->DeregisterRegion(slots_region_->id());
  for (const std::unique_ptr<Op>& op : ops_) {
    if (op->entered) epoch_->Exit();
  }
}

char* OneSidedAccess::SlotAt(int slot) const {
  const uint64_t small = options_.small_slots;
  const uint64_t i = static_cast<uint64_t>(slot);
  return slots_.base + (i < small ? i * kSmallSlotBytes : small * kSmallSlotBytes + (i - small) * kLargeSlotBytes);
}

OneSidedAccess::Op* OneSidedAccess::NewOp(Kind kind, RawPtr p, uint32_t offset, uint32_t length) {
  Op* op;
  if (free_ops_.empty()) {
    ops_.push_back(std::make_unique<Op>());
    op = ops_.back().get();
  } else {
    op = free_ops_.back();
    free_ops_.pop_back();
  }
  op->kind = kind;
  op->p = p;
  op->offset = offset;
  op->length = length;
  op->compare = op->swap = 0;
  op->bytes.clear();
  op->entered = false;
  op->slot = -1;
  op->capability_refreshes = 0;
  op->torn_validations = 0;
  op->primary = kInvalidNode;
  return op;
}

void OneSidedAccess::Read(RawPtr p, uint32_t offset, uint32_t length, ReadDone done) {
  Op* op = NewOp(Kind::kRead, p, offset, length);
  op->read_done = std::move(done);
  Submit(op);
}

void OneSidedAccess::Write(RawPtr p, uint32_t offset, std::span<const char> bytes, StatusDone done) {
  Op* op = NewOp(Kind::kWrite, p, offset, static_cast<uint32_t>(std::min<size_t>(bytes.size(), UINT32_MAX)));
  if (bytes.size() <= alloc::kMaxSlotBytes) op->bytes.assign(bytes.data(), bytes.size());
  op->status_done = std::move(done);
  Submit(op);
}

void OneSidedAccess::CompareSwap(RawPtr p, uint32_t offset, uint64_t expected, uint64_t desired, WordDone done) {
  Op* op = NewOp(Kind::kCompareSwap, p, offset, 8);
  op->compare = expected;
  op->swap = desired;
  op->word_done = std::move(done);
  Submit(op);
}

void OneSidedAccess::FetchAdd(RawPtr p, uint32_t offset, uint64_t delta, WordDone done) {
  Op* op = NewOp(Kind::kFetchAdd, p, offset, 8);
  op->compare = delta;
  op->word_done = std::move(done);
  Submit(op);
}

void OneSidedAccess::MarkDying(RawPtr p, StatusDone done) {
  Op* op = NewOp(Kind::kMarkDying, p, 0, 0);
  op->status_done = std::move(done);
  Submit(op);
}

void OneSidedAccess::Submit(Op* op) {
  const char* name = KindName(static_cast<int>(op->kind));
  const RawPtr& p = op->p;
  absl::Status invalid;
  if (p.is_null()) {
    invalid = absl::InvalidArgumentError(absl::StrFormat("%s of a null pointer", name));
  } else if (IsPrivateRegion(p.addr.region()) || p.addr.offset() % kObjectAlignment != 0 || p.size == 0 ||
             p.size > alloc::MaxPayloadBytes()) {
    invalid = absl::InvalidArgumentError(absl::StrFormat("%s: %s cannot name a one-sided object", name, p.ToString()));
  } else if (op->kind == Kind::kRead || op->kind == Kind::kWrite) {
    if (op->length == 0) {
      invalid = absl::InvalidArgumentError(absl::StrFormat("%s of 0 bytes at offset %d of %s", name, op->offset,
                                                           p.ToString()));
    } else if (uint64_t{op->offset} + op->length > p.size) {
      invalid = absl::InvalidArgumentError(absl::StrFormat(
          "%s of bytes [%d, %d) of %s: the object has %d bytes", name, op->offset,
          uint64_t{op->offset} + op->length, p.ToString(), p.size));
    }
  } else if (op->kind == Kind::kCompareSwap || op->kind == Kind::kFetchAdd) {
    if (op->offset % 8 != 0) {
      invalid = absl::InvalidArgumentError(absl::StrFormat(
          "%s at offset %d of %s: an 8-byte atomic needs an 8-byte-aligned offset", name, op->offset, p.ToString()));
    } else if (uint64_t{op->offset} + 8 > p.size) {
      invalid = absl::InvalidArgumentError(absl::StrFormat(
          "%s of bytes [%d, %d) of %s: the object has %d bytes", name, op->offset, uint64_t{op->offset} + 8,
          p.ToString(), p.size));
    }
  }
  std::weak_ptr<OneSidedAccess*> alive = alive_;
  thread_->loop().Defer([alive, op, invalid = std::move(invalid)]() mutable {
    if (alive.expired()) return;
    OneSidedAccess* self = *alive.lock();
    if (!invalid.ok()) return self->Finish(op, std::move(invalid));
    self->Start(op);
  });
}

void OneSidedAccess::Start(Op* op) {
  if (!op->entered) {
    epoch_->Enter();
    op->entered = true;
  }
  op->primary = kInvalidNode;
  if (gate_ != nullptr && !gate_->serving_at(thread_->loop().now_ns())) {
    return Finish(op, absl::UnavailableError(
                          "this node is not serving (its lease is lost, or it is not a member of the configuration)"));
  }
  if (const alloc::LocalRegion* r = allocator_->blocks().FindRegion(op->p.addr.region())) {
    if (!r->region().Contains(op->p.addr.offset(), kObjectHeaderBytes + op->p.size)) {
      return Finish(op, absl::InvalidArgumentError(
                            absl::StrFormat("%s runs past the end of its region", op->p.ToString())));
    }
    return ExecuteLocal(op, r->base());
  }
  WithCapability(op);
}

absl::Status OneSidedAccess::CheckHeader(const Op& op, uint64_t word, uint64_t incarnation_word) const {
  const RawPtr& p = op.p;
  if (!IsAllocated(incarnation_word) || FatIncarnation(IncarnationOf(incarnation_word)) != p.incarnation) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stale pointer %s: the object was freed or reallocated (the slot is %s, incarnation %d)", p.ToString(),
        IsAllocated(incarnation_word) ? "allocated" : "free", IncarnationOf(incarnation_word)));
  }
  if (!IsRawHeaderWord(word)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is a transactional object (txAlloc): one-sided ops reach only objects from rawAlloc; use txRead/txWrite",
        p.addr.ToString()));
  }
  if (RawSizeOf(word) != p.size || !RawIncarnationMatches(word, p.incarnation)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s does not describe the one-sided object there (%d bytes): a pointer from rawAlloc was changed",
        p.ToString(), RawSizeOf(word)));
  }
  const uint64_t flags = RawFlagsOf(word);
  if ((flags & kRawLocked) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is being freed", p.ToString()));
  }
  if (op.kind == Kind::kMarkDying) return absl::OkStatus();  // dying or lost: the free goes on
  if ((flags & kRawLost) != 0) {
    return absl::DataLossError(absl::StrFormat(
        "%s is lost: the primary of its region changed (failover, restart or handover) and one-sided writes are "
        "not replicated; free it with rawFree",
        p.ToString()));
  }
  if ((flags & kRawDying) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is being freed (rawFree)", p.ToString()));
  }
  return absl::OkStatus();
}

void OneSidedAccess::ExecuteLocal(Op* op, char* base) {
  char* object = base + op->p.addr.offset();
  const uint64_t word = LoadHeaderWord(object + kVersionOffset);
  const uint64_t incarnation = LoadHeaderWord(object + kIncarnationOffset);
  if (absl::Status s = CheckHeader(*op, word, incarnation); !s.ok()) return Finish(op, std::move(s));
  char* at = object + kObjectHeaderBytes + op->offset;
  switch (op->kind) {
    case Kind::kRead: {
      const bool torn = ReadWithTornCheck(scratch_.data(), at, op->length);
      return FinishRead(op, scratch_.data(), torn);
    }
    case Kind::kWrite:
      OrderedStoreCopy(at, op->bytes.data(), op->length);
      return FinishOk(op);
    case Kind::kCompareSwap:
      return FinishWord(op, AtomicCompareSwap(at, op->compare, op->swap));
    case Kind::kFetchAdd:
      return FinishWord(op, AtomicFetchAdd(at, op->compare));
    case Kind::kMarkDying: {
      const uint64_t live = RawHeaderWord(op->p.size, op->p.incarnation);
      const uint64_t old = AtomicCompareSwap(object + kVersionOffset, live, live | kRawDying);
      if (old == live) return FinishOk(op);
      // Changed since the check: look again (dying or lost goes on; anything else fails).
      if (absl::Status s = CheckHeader(*op, old, LoadHeaderWord(object + kIncarnationOffset)); !s.ok()) {
        return Finish(op, std::move(s));
      }
      return FinishOk(op);
    }
  }
}

void OneSidedAccess::WithCapability(Op* op) {
  const uint64_t generation = allocator_->environment().placement_generation();
  if (generation != validated_generation_) {
    validated_.clear();  // invariant 4: validations of another configuration
    validated_generation_ = generation;
  }
  const RegionId region = op->p.addr.region();
  absl::StatusOr<NodeId> primary = allocator_->RemotePrimary(region, &placement_);
  if (absl::IsFailedPrecondition(primary.status())) {
    // This node is the region's primary in the configuration but does not hold it yet
    // (a promotion or handover under way): not the object's fault, so not the
    // FailedPrecondition a freed object gets.
    return Finish(op, absl::UnavailableError(absl::StrFormat("%s: %s; try again", op->p.ToString(),
                                                             primary.status().message())));
  }
  if (!primary.ok()) return Finish(op, primary.status());
  op->primary = *primary;
  auto known = capabilities_.find(region);
  if (known != capabilities_.end() && known->second.primary == *primary) {
    if (op->kind != Kind::kMarkDying && IsValidated(*op)) return PostOp(op);
    return PostValidation(op);
  }
  auto [waiting, first] = fetching_.try_emplace(region);
  waiting->second.push_back(op);
  if (!first) return;
  ++stats_.capability_fetches;
  std::weak_ptr<OneSidedAccess*> alive = alive_;
  const NodeId to = *primary;
  alloc::RequestRegionCapability(*thread_, to, region,
                                 [alive, region, to](absl::StatusOr<RegionCapability> cap) {
                                   if (alive.expired()) return;
                                   (*alive.lock())->OnCapability(region, to, std::move(cap));
                                 });
}

void OneSidedAccess::OnCapability(RegionId region, NodeId primary, absl::StatusOr<RegionCapability> cap) {
  std::vector<Op*> waiting;
  if (auto it = fetching_.find(region); it != fetching_.end()) {
    waiting = std::move(it->second);
    fetching_.erase(it);
  }
  if (cap.ok()) capabilities_[region] = Capability{primary, *cap};
  for (Op* op : waiting) {
    if (!cap.ok()) {
      Finish(op, cap.status());
    } else if (op->primary != primary) {
      Start(op);  // the configuration moved meanwhile
    } else if (op->kind != Kind::kMarkDying && IsValidated(*op)) {
      PostOp(op);
    } else {
      PostValidation(op);
    }
  }
}

bool OneSidedAccess::IsValidated(const Op& op) {
  auto it = validated_.find(op.p.addr.raw());
  return it != validated_.end() && it->second.size == op.p.size && it->second.incarnation == op.p.incarnation &&
         it->second.epoch == epoch_->epoch();
}

bool OneSidedAccess::TakeSlot(Op* op) {
  if (op->slot >= 0) return true;
  const bool large = op->kind == Kind::kRead || op->kind == Kind::kWrite ? op->length > kSmallSlotBytes : false;
  std::vector<int>& pool = large ? free_large_ : free_small_;
  if (pool.empty()) {
    waiting_.push_back(op);
    return false;
  }
  op->slot = pool.back();
  pool.pop_back();
  return true;
}

void OneSidedAccess::ReleaseSlot(Op* op) {
  if (op->slot < 0) return;
  (op->slot < static_cast<int>(options_.small_slots) ? free_small_ : free_large_).push_back(op->slot);
  op->slot = -1;
  if (!waiting_.empty() && !retry_timer_) {
    retry_timer_ = true;
    std::weak_ptr<OneSidedAccess*> alive = alive_;
    thread_->loop().Defer([alive] {
      if (!alive.expired()) (*alive.lock())->RetryWaiting();
    });
  }
}

void OneSidedAccess::RetryWaiting() {
  retry_timer_ = false;
  std::deque<Op*> again = std::move(waiting_);
  waiting_.clear();
  for (Op* op : again) Start(op);  // its primary or capability may have changed meanwhile
}

void OneSidedAccess::Post(Op* op, WorkRequest wr, void (OneSidedAccess::*then)(Op*, const Completion&)) {
  auto known = capabilities_.find(op->p.addr.region());
  if (known == capabilities_.end()) return Start(op);  // dropped meanwhile: fetch it again
  wr.remote = &known->second.cap;  // read during the post only
  wr.local = SlotAt(op->slot);
  wr.lkey = slots_.lkey;
  std::weak_ptr<OneSidedAccess*> alive = alive_;
  absl::Status s = thread_->PostOneSided(op->primary, wr, [alive, op, then](const Completion& c) {
    if (alive.expired()) return;
    OneSidedAccess* self = *alive.lock();
    --self->in_flight_;
    (self->*then)(op, c);
    if (!self->waiting_.empty() && !self->retry_timer_) {
      self->retry_timer_ = true;
      self->thread_->loop().Defer([alive] {
        if (!alive.expired()) (*alive.lock())->RetryWaiting();
      });
    }
  });
  if (s.ok()) {
    ++in_flight_;
    return;
  }
  if (absl::IsResourceExhausted(s)) {
    // The endpoint is full (messaging shares it): wait for a completion of ours, or a
    // moment when none is in flight.
    waiting_.push_back(op);
    if (in_flight_ == 0 && !retry_timer_) {
      retry_timer_ = true;
      std::weak_ptr<OneSidedAccess*> alive = alive_;
      thread_->loop().RunAfter(absl::Microseconds(50), [alive] {
        if (!alive.expired()) (*alive.lock())->RetryWaiting();
      });
    }
    return;
  }
  Finish(op, std::move(s));
}

void OneSidedAccess::PostValidation(Op* op) {
  if (!TakeSlot(op)) return;
  ++stats_.validations;
  WorkRequest wr;
  wr.opcode = Opcode::kRead;
  wr.length = static_cast<uint32_t>(kObjectHeaderBytes);
  wr.remote_offset = op->p.addr.offset();
  Post(op, wr, &OneSidedAccess::OnValidation);
}

void OneSidedAccess::OnValidation(Op* op, const Completion& c) {
  if (c.status == CompletionStatus::kRemoteAccessError && op->capability_refreshes++ == 0) {
    // A stale capability (the region was registered again): fetch it once more.
    capabilities_.erase(op->p.addr.region());
    return Start(op);
  }
  if (c.status != CompletionStatus::kSuccess) {
    return Finish(op, absl::UnavailableError(absl::StrFormat("%s: READ of %s's header at node %d failed: %s",
                                                             KindName(static_cast<int>(op->kind)), op->p.ToString(),
                                                             op->primary, CompletionStatusName(c.status))));
  }
  if (c.torn) {
    // A torn header is read again, never accepted (invariant 1).
    if (++op->torn_validations < kMaxTornValidations) return PostValidation(op);
    validated_.erase(op->p.addr.raw());
    return Finish(op, absl::UnavailableError(absl::StrFormat(
                          "%s: %s's header changed under %d READs in a row at node %d; try again",
                          KindName(static_cast<int>(op->kind)), op->p.ToString(), kMaxTornValidations, op->primary)));
  }
  const char* header = SlotAt(op->slot);
  uint64_t word, incarnation;
  std::memcpy(&word, header + kVersionOffset, sizeof(word));
  std::memcpy(&incarnation, header + kIncarnationOffset, sizeof(incarnation));
  if (absl::Status s = CheckHeader(*op, word, incarnation); !s.ok()) {
    validated_.erase(op->p.addr.raw());
    return Finish(op, std::move(s));
  }
  if (op->kind != Kind::kMarkDying) {
    if (validated_.size() >= options_.max_cached_validations) validated_.clear();
    validated_[op->p.addr.raw()] = Validated{op->p.size, op->p.incarnation, epoch_->epoch()};
  }
  PostOp(op);
}

void OneSidedAccess::PostOp(Op* op) {
  if (!TakeSlot(op)) return;
  WorkRequest wr;
  wr.remote_offset = PayloadOffset(*op);
  switch (op->kind) {
    case Kind::kRead:
      wr.opcode = Opcode::kRead;
      wr.length = op->length;
      break;
    case Kind::kWrite:
      std::memcpy(SlotAt(op->slot), op->bytes.data(), op->length);
      wr.opcode = Opcode::kWrite;
      wr.length = op->length;
      break;
    case Kind::kCompareSwap:
      wr.opcode = Opcode::kCompareSwap;
      wr.length = 8;
      wr.compare_add = op->compare;
      wr.swap = op->swap;
      break;
    case Kind::kFetchAdd:
      wr.opcode = Opcode::kFetchAdd;
      wr.length = 8;
      wr.compare_add = op->compare;
      break;
    case Kind::kMarkDying: {
      const uint64_t live = RawHeaderWord(op->p.size, op->p.incarnation);
      wr.opcode = Opcode::kCompareSwap;
      wr.length = 8;
      wr.remote_offset = op->p.addr.offset() + kVersionOffset;
      wr.compare_add = live;
      wr.swap = live | kRawDying;
      break;
    }
  }
  Post(op, wr, &OneSidedAccess::OnOpDone);
}

void OneSidedAccess::OnOpDone(Op* op, const Completion& c) {
  const char* name = KindName(static_cast<int>(op->kind));
  if (c.status == CompletionStatus::kRemoteAccessError && op->capability_refreshes++ == 0) {
    // Refused before it touched memory (a stale capability): fetch it once more.
    capabilities_.erase(op->p.addr.region());
    return Start(op);
  }
  if (c.status == CompletionStatus::kTransportError) {
    return Finish(op, absl::UnavailableError(absl::StrFormat(
                          "%s of %s: the connection to node %d broke while it was in flight; it may or may not have "
                          "executed",
                          name, op->p.ToString(), op->primary)));
  }
  if (c.status != CompletionStatus::kSuccess) {
    return Finish(op, absl::UnavailableError(absl::StrFormat("%s of %s at node %d failed (not executed): %s", name,
                                                             op->p.ToString(), op->primary,
                                                             CompletionStatusName(c.status))));
  }
  const char* slot = SlotAt(op->slot);
  switch (op->kind) {
    case Kind::kRead:
      return FinishRead(op, slot, c.torn);
    case Kind::kWrite:
      return FinishOk(op);
    case Kind::kCompareSwap:
    case Kind::kFetchAdd: {
      uint64_t old;
      std::memcpy(&old, slot, sizeof(old));
      return FinishWord(op, old);
    }
    case Kind::kMarkDying: {
      uint64_t old;
      std::memcpy(&old, slot, sizeof(old));
      if (old == RawHeaderWord(op->p.size, op->p.incarnation)) return FinishOk(op);
      // Changed since the validation: a raw word of this object that is dying or lost lets
      // the free go on; anything else (locked; another object) fails. The incarnation word
      // was checked by the validation and moves only after kRawLocked.
      if (!IsRawHeaderWord(old) || RawSizeOf(old) != op->p.size || !RawIncarnationMatches(old, op->p.incarnation)) {
        return Finish(op, absl::FailedPreconditionError(
                              absl::StrFormat("%s: the object was freed meanwhile", op->p.ToString())));
      }
      if ((old & kRawLocked) != 0) {
        return Finish(op, absl::FailedPreconditionError(absl::StrFormat("%s is being freed", op->p.ToString())));
      }
      return FinishOk(op);
    }
  }
}

void OneSidedAccess::Finish(Op* op, absl::Status error) {
  ++stats_.failed;
  ReadDone read_done = std::move(op->read_done);
  WordDone word_done = std::move(op->word_done);
  StatusDone status_done = std::move(op->status_done);
  Recycle(op);
  if (read_done) return read_done(std::move(error));
  if (word_done) return word_done(std::move(error));
  if (status_done) status_done(std::move(error));
}

void OneSidedAccess::FinishRead(Op* op, const char* data, bool torn) {
  ++stats_.reads;
  ++(op->primary == kInvalidNode ? stats_.local : stats_.remote);
  stats_.bytes_read += op->length;
  ReadDone done = std::move(op->read_done);
  if (op->entered) {
    epoch_->Exit();
    op->entered = false;
  }
  // The slot (or the scratch buffer) stays the op's until the continuation returns: a
  // read it starts runs later, from the loop.
  done(OneSidedRead{std::span<const char>(data, op->length), torn});
  Recycle(op);
}

void OneSidedAccess::FinishWord(Op* op, uint64_t old) {
  ++(op->kind == Kind::kCompareSwap ? stats_.compare_swaps : stats_.fetch_adds);
  ++(op->primary == kInvalidNode ? stats_.local : stats_.remote);
  WordDone done = std::move(op->word_done);
  Recycle(op);
  done(old);
}

void OneSidedAccess::FinishOk(Op* op) {
  if (op->kind == Kind::kWrite) {
    ++stats_.writes;
    stats_.bytes_written += op->length;
    ++(op->primary == kInvalidNode ? stats_.local : stats_.remote);
  }
  StatusDone done = std::move(op->status_done);
  Recycle(op);
  done(absl::OkStatus());
}

void OneSidedAccess::Recycle(Op* op) {
  if (op->entered) {
    epoch_->Exit();
    op->entered = false;
  }
  ReleaseSlot(op);
  op->bytes.clear();
  free_ops_.push_back(op);
}

}  // namespace farm::tx
