#include "tx/object_reader.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"
#include "alloc/alloc_service.h"
#include "alloc/size_classes.h"
#include "farm/base/cpu_copy.h"
#include "farm/base/object_codec.h"

namespace farm::tx {
namespace {

// Every slot holds the largest stored object.
constexpr uint64_t kSlotBytes = alloc::kMaxSlotBytes;

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectReader>> ObjectReader::Create(MsgThread* thread, Fabric* fabric,
                                                                   alloc::Allocator* allocator,
                                                                   const ObjectReaderOptions& options) {
  if (options.slots == 0) return absl::InvalidArgumentError("an ObjectReader needs at least one slot");
  absl::StatusOr<Region> slots = Region::Create(options.slot_region, options.slots * kSlotBytes,
                                                RegionOptions{HugePages::kNone});
  if (!slots.ok()) return slots.status();
  auto region = std::make_unique<Region>(std::move(*slots));
  absl::StatusOr<RegisteredRegion> registered = fabric->RegisterRegion(*region);
  if (!registered.ok()) return registered.status();
  return std::unique_ptr<ObjectReader>(
      new ObjectReader(thread, fabric, allocator, options, std::move(region), registered->local));
}

ObjectReader::ObjectReader(MsgThread* thread, Fabric* fabric, alloc::Allocator* allocator,
                           const ObjectReaderOptions& options, std::unique_ptr<Region> slots,
                           LocalRegion local)
    : thread_(thread),
      fabric_(fabric),
      allocator_(allocator),
      options_(options),
      slots_region_(std::move(slots)),
      slots_(local),
      scratch_(2 * kSlotBytes),
      alive_(std::make_shared<ObjectReader*>(this)) {
  for (uint32_t i = options.slots; i > 0; --i) free_slots_.push_back(i - 1);
}

ObjectReader::~ObjectReader() {
  alive_.reset();
  // READs still in flight write into the slots until the fabric revokes them.
  (void)fabric_->DeregisterRegion(slots_region_->id());
  for (Attempt* a : waiting_for_slot_) {
    absl::Status cancelled = absl::CancelledError("the reader was destroyed");
    if (a->done) {
      a->done(cancelled);
    } else {
      a->done_many(cancelled);
    }
  }
}

ObjectReader::Attempt* ObjectReader::Begin() {
  Attempt* a = TakeAttempt();
  a->give_up = thread_->loop().now() + absl::ToChronoNanoseconds(options_.give_up_after);
  a->backoff = options_.backoff_min;
  a->capability_refreshes = 0;
  ++stats_.reads;
  return a;
}

void ObjectReader::Read(FatPtr object, ReadDone done) {
  Attempt* a = Begin();
  a->objects[0] = object;
  a->count = 1;
  a->done = std::move(done);
  // Never inline: the caller's continuation runs after Read returns.
  std::weak_ptr<ObjectReader*> alive = alive_;
  thread_->loop().Defer([alive, a] {
    if (!alive.expired()) (*alive.lock())->Start(a);
  });
}

void ObjectReader::ReadMany(std::span<const FatPtr> objects, ReadManyDone done) {
  Attempt* a = Begin();
  a->count = static_cast<uint32_t>(std::min<size_t>(objects.size(), kMaxObjectsPerRead));
  std::copy_n(objects.begin(), a->count, a->objects.begin());
  a->done_many = std::move(done);
  absl::Status shape;
  if (objects.empty() || objects.size() > kMaxObjectsPerRead) {
    shape = absl::InvalidArgumentError(
        absl::StrFormat("ReadMany takes 1 to %d objects, not %d", kMaxObjectsPerRead, objects.size()));
  }
  for (size_t i = 1; shape.ok() && i < objects.size(); ++i) {
    const FatPtr& prev = objects[i - 1];
    const FatPtr& p = objects[i];
    if (p.addr.region() != prev.addr.region() ||
        p.addr.offset() < prev.addr.offset() + StoredBytes(prev.addr.offset(), prev.size)) {
      shape = absl::InvalidArgumentError(absl::StrFormat(
          "ReadMany: %s does not follow %s in the same region", p.ToString(), prev.ToString()));
    }
  }
  if (shape.ok() && SpanBytes(*a) > kMaxReadSpanBytes) {
    shape = absl::InvalidArgumentError(absl::StrFormat(
        "ReadMany: the objects span %d bytes (at most %d)", SpanBytes(*a), kMaxReadSpanBytes));
  }
  std::weak_ptr<ObjectReader*> alive = alive_;
  thread_->loop().Defer([alive, a, shape = std::move(shape)]() mutable {
    if (alive.expired()) return;
    ObjectReader* self = *alive.lock();
    if (!shape.ok()) return self->Finish(a, std::move(shape));
    self->Start(a);
  });
}

uint64_t ObjectReader::SpanBytes(const Attempt& a) {
  const FatPtr& first = a.objects[0];
  const FatPtr& last = a.objects[a.count - 1];
  return last.addr.offset() - first.addr.offset() + StoredBytes(last.addr.offset(), last.size);
}

void ObjectReader::Start(Attempt* a) {
  // A node cut off from the cluster answers at once rather than waiting on peers it may
  // never reach (and FinishAccepted checks again: the lease may end meanwhile).
  if (gate_ != nullptr && !gate_->serving_at(thread_->loop().now_ns())) {
    return Finish(a, absl::UnavailableError(
                         "this node is not serving (its lease is lost, or it is not a member of the configuration)"));
  }
  for (uint32_t i = 0; i < a->count; ++i) {
    const FatPtr p = a->objects[i];
    if (p.is_null()) return Finish(a, absl::InvalidArgumentError("read of a null pointer"));
    if (p.size > alloc::MaxPayloadBytes() || p.addr.offset() % kObjectAlignment != 0) {
      return Finish(a, absl::OutOfRangeError(absl::StrFormat("%s cannot name an object", p.ToString())));
    }
  }
  if (const alloc::LocalRegion* r = allocator_->blocks().FindRegion(a->objects[0].addr.region())) {
    return ReadLocal(a, *r);
  }
  ReadRemote(a);
}

void ObjectReader::ReadLocal(Attempt* a, const alloc::LocalRegion& region) {
  ++stats_.local;
  const FatPtr p = a->objects[0];
  const uint64_t stored = SpanBytes(*a);
  if (!region.region().Contains(p.addr.offset(), stored)) {
    return Finish(a, absl::OutOfRangeError(absl::StrFormat("%s runs past the end of its region",
                                                           p.ToString())));
  }
  const bool torn = ReadWithTornCheck(scratch_.data(), region.base() + p.addr.offset(), stored);
  OnCopy(a, scratch_.data(), torn, /*too_slow=*/false);
}

void ObjectReader::ReadRemote(Attempt* a) {
  const RegionId region = a->objects[0].addr.region();
  absl::StatusOr<NodeId> remote = allocator_->RemotePrimary(region, &placement_);
  if (!remote.ok()) return Finish(a, remote.status());
  const NodeId primary = *remote;
  if (capabilities_.contains(region)) return PostRead(a, primary);
  // One fetch per region at a time: reads that need the capability meanwhile wait for it.
  auto [fetch, first] = capability_waiters_.try_emplace(region);
  fetch->second.push_back(a);
  if (!first) return;
  ++stats_.capability_fetches;
  std::weak_ptr<ObjectReader*> alive = alive_;
  alloc::RequestRegionCapability(
      *thread_, primary, region, [alive, region](absl::StatusOr<RegionCapability> cap) {
        if (alive.expired()) return;
        ObjectReader* self = *alive.lock();
        auto node = self->capability_waiters_.extract(region);
        if (!node) return;
        if (cap.ok()) self->capabilities_[region] = *cap;
        // Each waiter looks its primary up again (the placement may have moved on since
        // this fetch left) and finds the capability cached. Continuations may read the
        // region again: they find it cached too, or (after an error) fetch it anew.
        for (Attempt* a : node.mapped()) {
          if (!cap.ok()) {
            self->Finish(a, cap.status());
          } else {
            self->ReadRemote(a);
          }
        }
      });
}

void ObjectReader::PostRead(Attempt* a, NodeId primary) {
  if (free_slots_.empty()) {
    waiting_for_slot_.push_back(a);
    return;
  }
  const uint32_t slot = free_slots_.back();
  free_slots_.pop_back();
  const FatPtr p = a->objects[0];
  WorkRequest wr;
  wr.opcode = Opcode::kRead;
  wr.local = slots_.base + uint64_t{slot} * kSlotBytes;
  wr.lkey = slots_.lkey;
  wr.length = static_cast<uint32_t>(SpanBytes(*a));
  wr.remote = &capabilities_[p.addr.region()];  // read during Post only
  wr.remote_offset = p.addr.offset();
  const EventLoop::Clock::time_point posted = EventLoop::Clock::now();
  std::weak_ptr<ObjectReader*> alive = alive_;
  absl::Status s = thread_->PostOneSided(primary, wr, [alive, a, slot, posted](const Completion& c) {
    if (alive.expired()) return;
    (*alive.lock())->OnReadDone(a, slot, posted, c);
  });
  if (!s.ok()) {
    ReleaseSlot(slot);
    Finish(a, s);
  }
}

void ObjectReader::OnReadDone(Attempt* a, uint32_t slot, EventLoop::Clock::time_point posted,
                              const Completion& c) {
  if (c.status == CompletionStatus::kRemoteAccessError && a->capability_refreshes++ == 0) {
    // A stale capability (the region was registered again): fetch it once more.
    capabilities_.erase(a->objects[0].addr.region());
    ReleaseSlot(slot);
    return ReadRemote(a);
  }
  if (c.status != CompletionStatus::kSuccess) {
    absl::Status failed = absl::UnavailableError(absl::StrFormat(
        "READ of %s failed: %s", a->objects[0].ToString(), CompletionStatusName(c.status)));
    ReleaseSlot(slot);
    return Finish(a, std::move(failed));
  }
  const bool too_slow =
      EventLoop::Clock::now() - posted > absl::ToChronoNanoseconds(options_.read_bound);
  OnCopy(a, slots_.base + uint64_t{slot} * kSlotBytes, c.torn, too_slow);
  ReleaseSlot(slot);  // after the copy was decoded
}

void ObjectReader::OnCopy(Attempt* a, const char* image, bool torn, bool too_slow) {
  const uint64_t first = a->objects[0].addr.offset();
  // The scratch buffer's first half holds local copies, the second decoded payloads.
  char* out = scratch_.data() + kSlotBytes;
  for (uint32_t i = 0; i < a->count; ++i) {
    const FatPtr p = a->objects[i];
    const char* copy = image + (p.addr.offset() - first);
    switch (CheckCopy(copy, p.addr.offset(), p.size, p.incarnation, torn)) {
      case CopyCheck::kAccepted: {
        uint64_t version;
        std::memcpy(&version, copy + kVersionOffset, sizeof(version));
        ReadPayload(copy, p.addr.offset(), std::span<char>(out, p.size));
        results_[i] = ObjectRead{Unlocked(version), std::span<const char>(out, p.size)};
        out += p.size;
        break;
      }
      case CopyCheck::kLocked:
        ++stats_.retries_locked;
        return Retry(a);
      case CopyCheck::kInconsistent:
        ++stats_.retries_inconsistent;
        return Retry(a);
      case CopyCheck::kNotAllocated:
        return Finish(a, absl::FailedPreconditionError(absl::StrFormat(
                             "the object at %s is not allocated (freed)", p.addr.ToString())));
      case CopyCheck::kWrongIncarnation:
        return Finish(a, absl::FailedPreconditionError(absl::StrFormat(
                             "stale pointer %s: the object there is another incarnation", p.ToString())));
      case CopyCheck::kOneSided:
        return Finish(a, absl::InvalidArgumentError(absl::StrFormat(
                             "%s is a one-sided object (rawAlloc): reach it with rawRead/rawWrite/rawCas64/"
                             "rawFetchAdd64, never with a transaction or a lock-free read",
                             p.addr.ToString())));
    }
  }
  if (too_slow) {
    ++stats_.retries_slow;
    return Retry(a);
  }
  FinishAccepted(a);
}

void ObjectReader::Retry(Attempt* a) {
  if (thread_->loop().now() >= a->give_up) {
    return Finish(a, absl::DeadlineExceededError(absl::StrFormat(
                         "%s stayed locked or inconsistent for %s", a->objects[0].ToString(),
                         absl::FormatDuration(options_.give_up_after))));
  }
  // Randomized, growing backoff: writers finish, and readers do not retry in step.
  const absl::Duration wait = absl::Nanoseconds(
      absl::Uniform<int64_t>(rng_, 0, absl::ToInt64Nanoseconds(a->backoff) + 1));
  a->backoff = std::min(a->backoff * 2, options_.backoff_max);
  std::weak_ptr<ObjectReader*> alive = alive_;
  thread_->loop().RunAfter(wait, [alive, a] {
    if (!alive.expired()) (*alive.lock())->Start(a);
  });
}

void ObjectReader::Finish(Attempt* a, absl::Status error) {
  ReadDone done = std::move(a->done);
  ReadManyDone done_many = std::move(a->done_many);
  free_attempts_.push_back(a);  // reusable: the continuation may start the next read
  if (done) return done(std::move(error));
  done_many(std::move(error));
}

void ObjectReader::FinishAccepted(Attempt* a) {
  if (gate_ != nullptr && !gate_->serving_at(thread_->loop().now_ns())) {
    return Finish(a, absl::UnavailableError(
                         "this node is not serving (its lease is lost, or it is not a member of the configuration)"));
  }
  ReadDone done = std::move(a->done);
  ReadManyDone done_many = std::move(a->done_many);
  const uint32_t count = a->count;
  free_attempts_.push_back(a);
  // results_ stays intact until the continuation returns: reads it starts are deferred.
  if (done) return done(results_[0]);
  done_many(std::span<const ObjectRead>(results_.data(), count));
}

ObjectReader::Attempt* ObjectReader::TakeAttempt() {
  if (free_attempts_.empty()) {
    attempts_.push_back(std::make_unique<Attempt>());
    return attempts_.back().get();
  }
  Attempt* a = free_attempts_.back();
  free_attempts_.pop_back();
  return a;
}

void ObjectReader::ReleaseSlot(uint32_t slot) {
  free_slots_.push_back(slot);
  if (waiting_for_slot_.empty()) return;
  Attempt* next = waiting_for_slot_.front();
  waiting_for_slot_.pop_front();
  // Its primary and capability may have changed meanwhile: look again.
  std::weak_ptr<ObjectReader*> alive = alive_;
  thread_->loop().Defer([alive, next] {
    if (!alive.expired()) (*alive.lock())->Start(next);
  });
}

}  // namespace farm::tx
