#include "alloc/thread_allocator.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "farm/base/object_layout.h"

namespace farm::alloc {
namespace {

// The fast path's "no slot at hand" (never returned to callers of Allocate).
absl::Status Miss() { return absl::UnavailableError("no free slot at hand; a new block is needed"); }

}  // namespace

void ThreadAllocator::BlockList::Push(SlabBlock* b) {
  b->prev = nullptr;
  b->next = head;
  if (head != nullptr) head->prev = b;
  head = b;
  ++size;
}

void ThreadAllocator::BlockList::Remove(SlabBlock* b) {
  if (b->prev != nullptr) b->prev->next = b->next;
  if (b->next != nullptr) b->next->prev = b->prev;
  if (head == b) head = b->next;
  b->next = b->prev = nullptr;
  --size;
}

void ThreadAllocator::Relist(ClassState& cls, SlabBlock* b) {
  if (b->region()->leaving()) {  // handed over: no slot of it is taken here again
    Unlist(cls, b);
    return;
  }
  const SlabBlock::List want = b->HasLocalFree() ? SlabBlock::List::kAvailable : SlabBlock::List::kFull;
  if (b->list == want) return;
  Unlist(cls, b);
  (want == SlabBlock::List::kAvailable ? cls.available : cls.full).Push(b);
  b->list = want;
}

void ThreadAllocator::Unlist(ClassState& cls, SlabBlock* b) {
  if (b->list == SlabBlock::List::kNone) return;
  (b->list == SlabBlock::List::kAvailable ? cls.available : cls.full).Remove(b);
  b->list = SlabBlock::List::kNone;
}

ThreadAllocator::ThreadAllocator(Allocator* allocator, ThreadChannel* channel,
                                 EpochParticipant epoch)
    : allocator_(allocator),
      channel_(channel),
      epoch_(std::move(epoch)),
      alive_(std::make_shared<ThreadAllocator*>(this)) {}

ThreadAllocator::~ThreadAllocator() {
  alive_.reset();
  // Every block goes back to the machine: with objects (or empty, or retired) it waits
  // for the next thread that needs its class.
  BlockAllocator& blocks = allocator_->blocks();
  for (ClassState& cls : classes_) {
    for (BlockList* list : {&cls.available, &cls.full}) {
      while (SlabBlock* b = list->head) {
        Unlist(cls, b);
        blocks.Abandon(b);
      }
    }
    if (cls.current != nullptr) blocks.Abandon(cls.current);
    cls.current = nullptr;
  }
  for (std::vector<SlabBlock*>* retired : {&retired_waiting_, &retired_in_round_}) {
    for (SlabBlock* b : *retired) {
      b->retired = false;
      blocks.Abandon(b);
    }
  }
  std::deque<Pending> queue = std::move(queue_);
  for (Pending& p : queue) p.done(absl::CancelledError("the thread allocator was destroyed"));
}

LocalRegion* ThreadAllocator::FindRegion(RegionId id) {
  if (id == last_region_id_ && id != kNullRegion && !last_region_->leaving()) return last_region_;
  LocalRegion* r = nullptr;
  if (auto it = regions_.find(id); it != regions_.end() && !it->second->leaving()) {
    r = it->second;
  } else {
    r = allocator_->blocks().FindRegion(id);
    if (r == nullptr || r->leaving()) return nullptr;  // handed over (ForgetRegion)
    regions_[id] = r;
  }
  last_region_id_ = id;
  last_region_ = r;
  return r;
}

void ThreadAllocator::ForgetRegion(RegionId id) {
  for (ClassState& cls : classes_) {
    if (cls.current != nullptr && cls.current->region()->id() == id) cls.current = nullptr;
    for (BlockList* list : {&cls.available, &cls.full}) {
      for (SlabBlock* b = list->head; b != nullptr;) {
        SlabBlock* next = b->next;
        if (b->region()->id() == id) Unlist(cls, b);
        b = next;
      }
    }
  }
  regions_.erase(id);
  if (last_region_id_ == id) {
    last_region_id_ = kNullRegion;
    last_region_ = nullptr;
  }
}

// --- Fast path ---

absl::StatusOr<FatPtr> ThreadAllocator::TakeSlot(ClassState& cls, SlabBlock* block,
                                                 uint64_t payload) {
  int64_t slot = block->TakeLocal();
  if (slot < 0 && block->CollectRemoteFrees() > 0) slot = block->TakeLocal();
  if (block != cls.current) Relist(cls, block);
  if (slot < 0) return Miss();
  LocalRegion* r = block->region();
  const uint64_t offset = block->SlotOffset(static_cast<uint32_t>(slot));
  char* word = r->base() + offset + kIncarnationOffset;
  const uint64_t old = LoadHeaderWord(word);
  if (IsAllocated(old)) {
    // The bitmap and the memory disagree: never hand out the slot twice. It stays
    // taken (leaked) so that the live object keeps its memory.
    return absl::InternalError(absl::StrFormat(
        "slot at %s is free in the allocator but allocated in memory",
        Addr(r->id(), static_cast<uint32_t>(offset)).ToString()));
  }
  StoreHeaderWord(word, IncarnationWord(IncarnationOf(old), true));
  ++stats_.allocations;
  return FatPtr{Addr(r->id(), static_cast<uint32_t>(offset)), static_cast<uint32_t>(payload),
                FatIncarnation(IncarnationOf(old))};
}

void ThreadAllocator::MakeCurrent(ClassState& cls, SlabBlock* block) {
  if (cls.current == block) return;
  Unlist(cls, block);
  SlabBlock* old = cls.current;
  cls.current = block;
  if (old == nullptr) return;
  if (old->live() == 0) {
    Retire(old);
  } else {
    Relist(cls, old);
  }
}

void ThreadAllocator::Own(SlabBlock* block) {
  block->set_owner(this);
  Relist(classes_[block->size_class()], block);
}

SlabBlock* ThreadAllocator::FindOwnedBlock(ClassState& cls, RegionId region) {
  for (SlabBlock* b = cls.available.head; b != nullptr; b = b->next) {
    if (region == kNullRegion || b->region()->id() == region) return b;
  }
  // Full blocks may have been freed into by other threads.
  for (SlabBlock* b = cls.full.head; b != nullptr;) {
    SlabBlock* next = b->next;
    if ((region == kNullRegion || b->region()->id() == region) && b->remote_pending() &&
        b->CollectRemoteFrees() > 0) {
      return b;
    }
    b = next;
  }
  return nullptr;
}

SlabBlock* ThreadAllocator::FindOwnedBlockNear(ClassState& cls, const LocalRegion& hint) {
  SlabBlock* best = nullptr;
  uint64_t best_distance = 0;
  auto consider = [&](SlabBlock* b) {
    const LocalRegion& r = *b->region();
    if (r.ring() != hint.ring() || !(b->HasLocalFree() || b->remote_pending())) return;
    const uint64_t d = r.position() > hint.position() ? r.position() - hint.position()
                                                      : hint.position() - r.position();
    if (best == nullptr || d < best_distance) {
      best = b;
      best_distance = d;
    }
  };
  if (cls.current != nullptr) consider(cls.current);
  for (BlockList* list : {&cls.available, &cls.full}) {
    for (SlabBlock* b = list->head; b != nullptr; b = b->next) consider(b);
  }
  return best;
}

absl::StatusOr<FatPtr> ThreadAllocator::AllocateHere(uint64_t payload, Addr hint, Need* need) {
  absl::StatusOr<SizeClass> c = ClassForPayload(payload);
  if (!c.ok()) return c.status();
  ClassState& cls = classes_[*c];
  need->size_class = *c;

  if (hint.is_null()) {
    if (cls.current != nullptr) {
      absl::StatusOr<FatPtr> p = TakeSlot(cls, cls.current, payload);
      if (p.ok() || !absl::IsUnavailable(p.status())) return p;
    }
    while (SlabBlock* b = FindOwnedBlock(cls, kNullRegion)) {
      MakeCurrent(cls, b);
      absl::StatusOr<FatPtr> p = TakeSlot(cls, b, payload);
      if (!absl::IsUnavailable(p.status())) return p;
    }
    while (SlabBlock* b = allocator_->blocks().Adopt(*c, BlockPlace::Anywhere(), this)) {
      ++stats_.blocks_adopted;
      b->CollectRemoteFrees();
      Own(b);
      if (!b->HasLocalFree()) continue;
      MakeCurrent(cls, b);
      return TakeSlot(cls, b, payload);
    }
    need->place = BlockPlace::Anywhere();
    return Miss();
  }

  LocalRegion* r = FindRegion(hint.region());
  if (r == nullptr) {
    return absl::NotFoundError(absl::StrFormat("region %d is not held here", hint.region()));
  }
  // The hint's own block, when it is ours and of this class. Another thread's block may
  // be released meanwhile: look at it inside an operation (the release waits for it).
  SlabBlock* hint_block = nullptr;
  {
    EpochGuard guard(epoch_);
    SlabBlock* hb = r->BlockAt(hint.offset());
    if (hb != nullptr && hb->owner() == this) hint_block = hb;
  }
  if (hint_block != nullptr && hint_block->size_class() == *c && !hint_block->retired) {
    absl::StatusOr<FatPtr> p = TakeSlot(cls, hint_block, payload);
    if (!absl::IsUnavailable(p.status())) return p;
  }
  // A block of ours in the hint's region.
  if (cls.current != nullptr && cls.current->region() == r) {
    absl::StatusOr<FatPtr> p = TakeSlot(cls, cls.current, payload);
    if (!absl::IsUnavailable(p.status())) return p;
  }
  if (SlabBlock* b = FindOwnedBlock(cls, r->id())) return TakeSlot(cls, b, payload);
  if (SlabBlock* b = allocator_->blocks().Adopt(*c, BlockPlace::In(r->id()), this)) {
    ++stats_.blocks_adopted;
    b->CollectRemoteFrees();
    Own(b);
    absl::StatusOr<FatPtr> p = TakeSlot(cls, b, payload);
    if (!absl::IsUnavailable(p.status())) return p;
  }
  // No room for a new block in the hint's region: a block on its ring nearest it, as
  // GetBlock would carve, but one at hand first. (Carving one each time would take a
  // block per allocation near this hint and retire the last one empty, faster than
  // end-of-epoch rounds give them back.) It becomes the class's current block, where a
  // slot freed next stays available instead of retiring the block.
  if (!allocator_->blocks().HasRoom(r->id(), *c)) {
    SlabBlock* b = FindOwnedBlockNear(cls, *r);
    while (b == nullptr) {
      SlabBlock* adopted = allocator_->blocks().Adopt(*c, BlockPlace::Near(r->ring(), r->position()), this);
      if (adopted == nullptr) break;
      ++stats_.blocks_adopted;
      adopted->CollectRemoteFrees();
      Own(adopted);
      if (adopted->HasLocalFree()) b = adopted;
    }
    if (b != nullptr) {
      MakeCurrent(cls, b);
      absl::StatusOr<FatPtr> p = TakeSlot(cls, b, payload);
      if (!absl::IsUnavailable(p.status())) return p;
    }
  }
  need->place = BlockPlace::In(r->id());
  return Miss();
}

absl::StatusOr<FatPtr> ThreadAllocator::TryAllocate(uint64_t payload, Addr hint) {
  Need need;
  absl::StatusOr<FatPtr> p = AllocateHere(payload, hint, &need);
  if (absl::IsNotFound(p.status())) return Miss();  // another machine's region
  return p;
}

void ThreadAllocator::Allocate(uint64_t payload, Addr hint, PtrDone done) {
  Need need;
  absl::StatusOr<FatPtr> p = AllocateHere(payload, hint, &need);
  if (p.ok()) {
    done(std::move(p));
    return;
  }
  if (absl::IsNotFound(p.status())) {
    // The hint is in a region this node does not hold: its primary allocates.
    absl::StatusOr<NodeId> primary = allocator_->RemotePrimary(hint.region());
    if (!primary.ok()) {
      done(primary.status());
      return;
    }
    ++stats_.remote_allocations;
    channel_->AllocateRemote(*primary, static_cast<uint32_t>(payload), hint, std::move(done));
    return;
  }
  if (!absl::IsUnavailable(p.status())) {
    done(std::move(p));
    return;
  }
  Enqueue(Pending{payload, hint, std::move(done)});
}

// --- Slow path ---

void ThreadAllocator::Enqueue(Pending pending) {
  queue_.push_back(std::move(pending));
  ServeQueue();
}

void ThreadAllocator::ServeQueue() {
  // Iterative: steps that complete inline (no backups) end in FinishSlowStep, which
  // returns here instead of recursing.
  if (serving_) return;
  serving_ = true;
  while (!slow_step_running_ && !queue_.empty()) {
    Need need;
    absl::StatusOr<FatPtr> p = AllocateHere(queue_.front().payload, queue_.front().hint, &need);
    if (p.ok() || !absl::IsUnavailable(p.status())) {
      // Served (or failed) without a new block: a block arrived for an earlier one.
      Pending done = std::move(queue_.front());
      queue_.pop_front();
      done.done(std::move(p));
      continue;
    }
    slow_step_running_ = true;
    GetBlock(need);
  }
  serving_ = false;
}

void ThreadAllocator::FinishSlowStep(const absl::Status& error) {
  if (!error.ok() && !queue_.empty()) {
    Pending failed = std::move(queue_.front());
    queue_.pop_front();
    failed.done(error);
  }
  slow_step_running_ = false;
  ServeQueue();
}

void ThreadAllocator::GetBlock(const Need& need) {
  StartRound();  // retries a round that failed, if blocks still wait
  BlockAllocator& blocks = allocator_->blocks();
  BlockTableUpdate update;
  absl::StatusOr<SlabBlock*> block = blocks.Acquire(need.size_class, need.place, &update);
  if (absl::IsResourceExhausted(block.status()) && need.place.kind == BlockPlace::Kind::kRegion) {
    // The hint's region is full: a local region near it on its ring.
    if (LocalRegion* r = FindRegion(need.place.region)) {
      block = blocks.Acquire(need.size_class, BlockPlace::Near(r->ring(), r->position()), &update);
    }
  }
  if (absl::IsResourceExhausted(block.status())) {
    Reclaim();  // empty blocks go back for later allocations (after their round)
    GetRegion(need);
    return;
  }
  if (!block.ok()) {
    FinishSlowStep(block.status());
    return;
  }
  ++stats_.blocks_acquired;
  SlabBlock* b = *block;
  std::vector<NodeId> backups = allocator_->BackupsOf(update.region);
  std::weak_ptr<ThreadAllocator*> alive = alive_;
  Allocator* allocator = allocator_;
  channel_->ReplicateBlockWords(
      backups, update.region, update.first_unit, update.words,
      [alive, allocator, b](const absl::Status& status) {
        if (alive.expired()) {
          // The thread went away meanwhile: a replicated block waits for another owner;
          // one the backups may lack was never published and goes back at once.
          BlockTableUpdate undo;
          if (status.ok()) {
            allocator->blocks().Abandon(b);
          } else {
            allocator->blocks().Release(b, &undo);
          }
          return;
        }
        (*alive.lock())->OnBlockReady(b, status);
      });
}

void ThreadAllocator::OnBlockReady(SlabBlock* block, const absl::Status& replicated) {
  if (!replicated.ok()) {
    // Some backups may lack the block: it was never published nor used, so it goes back
    // at once, and the backups that have it learn of the release (best effort; a backup
    // that misses it cleans up when the units are assigned again).
    BlockTableUpdate undo;
    allocator_->blocks().Release(block, &undo);
    SendBlockWords(undo);
    FinishSlowStep(absl::Status(replicated.code(),
                                absl::StrCat("replicating a new block: ", replicated.message())));
    return;
  }
  allocator_->blocks().Publish(block);
  Own(block);
  ClassState& cls = classes_[block->size_class()];
  MakeCurrent(cls, block);
  if (!queue_.empty()) {
    // The new block serves the allocation that asked for it, wherever it landed (the
    // hint's region, or one near it).
    Pending head = std::move(queue_.front());
    queue_.pop_front();
    head.done(TakeSlot(cls, block, head.payload));
  }
  FinishSlowStep(absl::OkStatus());
}

void ThreadAllocator::GetRegion(const Need& need) {
  std::optional<membership::RingPosition> near;
  if (need.place.kind == BlockPlace::Kind::kRegion) {
    if (LocalRegion* r = FindRegion(need.place.region)) near = membership::RingPosition{r->ring(), r->position()};
  }
  const SizeClass size_class = need.size_class;
  NewRegion(near, [this, size_class](absl::StatusOr<RegionId> id) {
    if (!id.ok()) {
      FinishSlowStep(id.status());
      return;
    }
    Need in_new;
    in_new.size_class = size_class;
    in_new.place = BlockPlace::In(*id);
    GetBlock(in_new);
  });
}

void ThreadAllocator::CreateRegionNow(StatusDone done) {
  if (!allocator_->blocks().Regions().empty()) {
    done(absl::OkStatus());  // one came meanwhile
    return;
  }
  if (slow_step_running_) {
    done(absl::UnavailableError("a slow allocation step is running; ask again later"));
    return;
  }
  // A slow step: allocations that need a block meanwhile wait for this region.
  slow_step_running_ = true;
  NewRegion(std::nullopt, [this, done = std::move(done)](absl::StatusOr<RegionId> id) mutable {
    done(id.status());
    FinishSlowStep(absl::OkStatus());
  });
}

void ThreadAllocator::NewRegion(std::optional<membership::RingPosition> near,
                                absl::AnyInvocable<void(absl::StatusOr<RegionId>)> then) {
  std::vector<NodeId> backups;
  absl::StatusOr<std::unique_ptr<LocalRegion>> region = allocator_->CreateRegion(near, &backups);
  if (!region.ok()) {
    then(region.status());
    return;
  }
  ++stats_.regions_created;
  const RegionId id = (*region)->id();
  const uint64_t bytes = (*region)->bytes();
  // Held by the continuation until the backups have it; given back (deregistered and
  // its capacity returned) if the continuation is dropped without running.
  struct PendingRegion {
    Allocator* allocator = nullptr;
    std::unique_ptr<LocalRegion> region;
    ~PendingRegion() {
      if (region != nullptr) allocator->DropCreatedRegion(std::move(region));
    }
  };
  auto holder = std::make_shared<PendingRegion>();
  holder->allocator = allocator_;
  holder->region = std::move(*region);
  std::weak_ptr<ThreadAllocator*> alive = alive_;
  Allocator* allocator = allocator_;
  auto shared_then = std::make_shared<absl::AnyInvocable<void(absl::StatusOr<RegionId>)>>(std::move(then));
  channel_->ReplicateRegion(backups, id, bytes,
                            [alive, allocator, holder, id, shared_then](const absl::Status& status) {
    absl::Status added = status.ok() ? allocator->AddCreatedRegion(std::move(holder->region))
                                     : absl::Status(status.code(), absl::StrCat(
                                           "replicating new region ", id, ": ", status.message()));
    if (!status.ok()) allocator->DropCreatedRegion(std::move(holder->region));
    if (alive.expired()) return;  // `then` belongs to the thread allocator's state
    if (added.ok()) {
      (*shared_then)(id);
    } else {
      (*shared_then)(added);
    }
  });
}

// --- Free ---

absl::Status ThreadAllocator::FreeLocal(FatPtr object) {
  LocalRegion* r = FindRegion(object.addr.region());
  if (r == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("region %d is not held by this node", object.addr.region()));
  }
  const uint64_t offset = object.addr.offset();
  absl::StatusOr<SizeClass> c = ClassForPayload(object.size);
  // The class's current block is ours and cannot be released under us; any other block
  // is looked up and used inside an operation (a release waits for it).
  if (c.ok()) {
    SlabBlock* current = classes_[*c].current;
    if (current != nullptr && current->region() == r && offset >= current->offset() &&
        offset - current->offset() < uint64_t{ClassInfo(*c).block_units} * kBlockUnitBytes) {
      return FreeSlot(object, r, current, c);
    }
  }
  EpochGuard guard(epoch_);
  return FreeSlot(object, r, r->BlockAt(offset), c);
}

absl::Status ThreadAllocator::FreeSlot(FatPtr object, LocalRegion* r, SlabBlock* b,
                                       const absl::StatusOr<SizeClass>& c) {
  const uint64_t offset = object.addr.offset();
  const int64_t slot = b == nullptr ? -1 : b->SlotAt(offset);
  if (slot < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("no object starts at %s", object.addr.ToString()));
  }
  if (!c.ok() || *c != b->size_class()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the object at %s has %d-byte slots; a pointer to %d bytes cannot name it",
        object.addr.ToString(), b->slot_bytes(), object.size));
  }
  char* word = r->base() + offset + kIncarnationOffset;
  uint64_t old = LoadHeaderWord(word);
  if (!IsAllocated(old)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("the object at %s is not allocated (freed already?)", object.addr.ToString()));
  }
  if (FatIncarnation(IncarnationOf(old)) != object.incarnation) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "stale pointer to %s: incarnation %d, the object there is incarnation %d",
        object.addr.ToString(), object.incarnation, FatIncarnation(IncarnationOf(old))));
  }
  if (!CasHeaderWord(word, old, IncarnationWord(IncarnationOf(old) + 1, false))) {
    return absl::FailedPreconditionError(
        absl::StrFormat("the object at %s was freed concurrently", object.addr.ToString()));
  }
  ++stats_.frees;
  if (b->owner() == this) {
    b->FreeLocal(static_cast<uint32_t>(slot));
    OnSlotFreed(b);
  } else {
    b->FreeRemote(static_cast<uint32_t>(slot));
  }
  return absl::OkStatus();
}

void ThreadAllocator::Free(FatPtr object, StatusDone done) {
  if (FindRegion(object.addr.region()) != nullptr) {
    done(FreeLocal(object));
    return;
  }
  absl::StatusOr<NodeId> primary = allocator_->RemotePrimary(object.addr.region());
  if (!primary.ok()) {
    done(primary.status());
    return;
  }
  channel_->FreeRemote(*primary, object, std::move(done));
}

void ThreadAllocator::OnSlotFreed(SlabBlock* block) {
  ClassState& cls = classes_[block->size_class()];
  if (block == cls.current) return;
  if (block->live() == 0) {
    Retire(block);
    return;
  }
  Relist(cls, block);
}

// --- Reclamation ---

void ThreadAllocator::Retire(SlabBlock* block) {
  ClassState& cls = classes_[block->size_class()];
  Unlist(cls, block);
  allocator_->blocks().Unpublish(block);  // before the round that precedes its release
  block->retired = true;
  retired_waiting_.push_back(block);
  ++stats_.blocks_retired;
  StartRound();
}

void ThreadAllocator::Reclaim() {
  // Blocks emptied by other threads' frees are found here (their owner never saw the
  // frees one by one).
  for (ClassState& cls : classes_) {
    std::vector<SlabBlock*> owned;
    for (BlockList* list : {&cls.available, &cls.full}) {
      for (SlabBlock* b = list->head; b != nullptr; b = b->next) owned.push_back(b);
    }
    for (SlabBlock* b : owned) {
      b->CollectRemoteFrees();
      if (b->live() == 0) {
        Retire(b);
      } else {
        Relist(cls, b);
      }
    }
  }
  StartRound();
}

void ThreadAllocator::StartRound() {
  if (round_running_ || retired_waiting_.empty()) return;
  round_running_ = true;
  ++stats_.rounds;
  retired_in_round_.insert(retired_in_round_.end(), retired_waiting_.begin(), retired_waiting_.end());
  retired_waiting_.clear();
  std::vector<NodeId> members;
  if (std::shared_ptr<const membership::Placement> p = allocator_->environment().placement()) {
    members = p->all_members();  // compute-only members read lock-free too
  } else {
    members.push_back(allocator_->options().self);
  }
  std::weak_ptr<ThreadAllocator*> alive = alive_;
  channel_->EndOfEpochRound(std::move(members), [alive](const absl::Status& status) {
    if (!alive.expired()) (*alive.lock())->OnRoundDone(status);
  });
}

void ThreadAllocator::OnRoundDone(const absl::Status& status) {
  round_running_ = false;
  if (!status.ok()) {
    // Retried with the next retirement or Reclaim (a failed member leaves the
    // configuration, and the next round does not ask it).
    ++stats_.rounds_failed;
    retired_waiting_.insert(retired_waiting_.end(), retired_in_round_.begin(), retired_in_round_.end());
    retired_in_round_.clear();
    return;
  }
  std::vector<SlabBlock*> released = std::move(retired_in_round_);
  retired_in_round_.clear();
  for (SlabBlock* b : released) {
    if (b->region()->leaving()) continue;  // the table is the new primary's now
    BlockTableUpdate update;
    allocator_->blocks().Release(b, &update);
    ++stats_.blocks_released;
    SendBlockWords(update);
  }
  StartRound();
}

void ThreadAllocator::SendBlockWords(const BlockTableUpdate& update) {
  std::vector<NodeId> backups = allocator_->BackupsOf(update.region);
  // Releases are not awaited: a backup that misses one keeps an empty slab block (the
  // recovery scan rebuilds it as such) until the units are assigned again, when it
  // frees the rest of the old block (BackupRegions::Apply).
  channel_->ReplicateBlockWords(backups, update.region, update.first_unit, update.words,
                                [](const absl::Status&) {});
}

}  // namespace farm::alloc
