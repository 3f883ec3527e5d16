#include "tx/transaction.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace farm::tx {

std::shared_ptr<Transaction> Transaction::Create(ThreadContext* ctx) {
  return std::shared_ptr<Transaction>(new Transaction(ctx));
}

Transaction::Transaction(ThreadContext* ctx) : ctx_(ctx), id_(ctx->NewTransactionId()) {
  TxObjectPool::Containers c = ctx_->spare_objects().TakeContainers();
  objects_ = std::move(c.objects);
  by_address_ = std::move(c.by_address);
  ctx_->allocator().epoch().Enter();
  std::shared_ptr<const membership::Placement> p = ctx_->placement();
  epoch_ = p == nullptr ? 0 : p->epoch();
}

// A committing transaction is kept alive by its own continuations, so only an active
// one can be destroyed unfinished. Its object copies go back to the thread, cleared.
Transaction::~Transaction() {
  Abort();
  TxObjectPool& spares = ctx_->spare_objects();
  for (std::unique_ptr<TxObject>& o : objects_) {
    if (o->data_.capacity() > TxObjectPool::kMaxKeptBytes) continue;
    o->version_ = kAnyVersion;
    o->data_.clear();
    o->read_ = o->written_ = o->allocated_ = o->freed_ = o->new_incarnation_ = o->raw_ = false;
    spares.Give(std::move(o));
  }
  objects_.clear();
  by_address_.erase(by_address_.begin(), by_address_.end());  // (clear() drops a large table's slots)
  spares.GiveContainers({std::move(objects_), std::move(by_address_)});
}

absl::Status Transaction::CheckActive() const {
  if (state_ == State::kActive) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrFormat(
      "transaction %x is %s", id_,
      state_ == State::kCommitting ? "committing" : state_ == State::kCommitted ? "committed" : "aborted"));
}

absl::Status Transaction::CheckOwned(const TxObject* object) const {
  if (absl::Status s = CheckActive(); !s.ok()) return s;
  if (object == nullptr) return absl::InvalidArgumentError("null object");
  auto it = by_address_.find(object->ptr_.addr.raw());
  if (it == by_address_.end() || it->second != object) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s was not read or allocated by transaction %x", object->ptr_.ToString(), id_));
  }
  if (object->freed_) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is freed by this transaction", object->ptr_.ToString()));
  }
  if (object->raw_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s is a one-sided object: it has no transactional copy to write", object->ptr_.ToString()));
  }
  return absl::OkStatus();
}

TxObject* Transaction::Find(Addr a) {
  auto it = by_address_.find(a.raw());
  return it == by_address_.end() ? nullptr : it->second;
}

TxObject* Transaction::Insert(FatPtr p) {
  std::unique_ptr<TxObject> object = ctx_->spare_objects().Take();
  if (object == nullptr) object = std::make_unique<TxObject>();
  object->ptr_ = p;
  TxObject* raw = object.get();
  objects_.push_back(std::move(object));
  by_address_[p.addr.raw()] = raw;
  return raw;
}

void Transaction::Read(FatPtr p, ObjectDone done) {
  auto self = shared_from_this();
  auto shared_done = std::make_shared<ObjectDone>(std::move(done));
  auto answer = [this, shared_done](absl::StatusOr<TxObject*> r) {
    ctx_->loop().Defer([r = std::move(r), shared_done]() mutable { (*shared_done)(std::move(r)); });
  };
  if (absl::Status s = CheckActive(); !s.ok()) return answer(s);
  if (TxObject* known = Find(p.addr)) {
    // The name this transaction gave the object (objIncrementIncarnation) names the same
    // object: a transaction sees its own renames.
    const bool renamed_here = known->new_incarnation_ && p.addr == known->ptr_.addr &&
                              p.size == known->ptr_.size && p.incarnation == known->ptr_.incarnation + 1;
    if (known->ptr_ != p && !renamed_here) {
      return answer(absl::FailedPreconditionError(absl::StrFormat(
          "%s was read by this transaction as %s", p.ToString(), known->ptr_.ToString())));
    }
    if (known->freed_) {
      return answer(absl::FailedPreconditionError(absl::StrFormat("%s is freed by this transaction", p.ToString())));
    }
    if (known->read_ || known->allocated_) return answer(known);
  }
  ctx_->reader().Read(p, [this, self, p, shared_done](absl::StatusOr<ObjectRead> r) {
    ObjectDone& done = *shared_done;
    if (!r.ok()) return done(r.status());
    if (absl::Status s = CheckActive(); !s.ok()) return done(s);
    TxObject* object = Find(p.addr);
    if (object != nullptr && object->ptr_ != p) {
      // The slot was reallocated to this transaction while the read was in flight.
      return done(absl::FailedPreconditionError(
          absl::StrFormat("%s was read by this transaction as %s", p.ToString(), object->ptr_.ToString())));
    }
    if (object == nullptr) object = Insert(p);
    if (!object->read_ && !object->allocated_) {
      // First copy wins: a later concurrent read of the same object changes nothing.
      object->read_ = true;
      object->version_ = r->version;
      if (!object->freed_) object->data_.assign(r->data.data(), r->data.size());
    }
    done(object);
  });
}

void Transaction::Alloc(uint32_t size, Addr hint, ObjectDone done) {
  AllocImpl(size, hint, /*raw=*/false, std::move(done));
}

void Transaction::AllocRaw(uint32_t size, Addr hint, ObjectDone done) {
  AllocImpl(size, hint, /*raw=*/true, std::move(done));
}

void Transaction::AllocImpl(uint32_t size, Addr hint, bool raw, ObjectDone done) {
  auto self = shared_from_this();
  auto shared_done = std::make_shared<ObjectDone>(std::move(done));
  auto answer = [this, shared_done](absl::StatusOr<TxObject*> r) {
    ctx_->loop().Defer([r = std::move(r), shared_done]() mutable { (*shared_done)(std::move(r)); });
  };
  if (absl::Status s = CheckActive(); !s.ok()) return answer(s);
  if (raw && size == 0) return answer(absl::InvalidArgumentError("a one-sided object of 0 bytes"));
  ctx_->allocator().Allocate(size, hint, [this, self, size, raw, answer](absl::StatusOr<FatPtr> p) {
    if (!p.ok()) return answer(p.status());
    if (state_ != State::kActive) {
      ctx_->allocator().Free(*p, [](const absl::Status&) {});
      return answer(CheckActive());
    }
    if (const TxObject* known = Find(p->addr)) {
      // Same-size slots are reused at once (incarnations guard old pointers): another
      // transaction freed an object this one read, and the slot came back to us. This
      // transaction cannot commit (its read fails validation); say so now, before the
      // new object shadows the old one.
      ctx_->allocator().Free(*p, [](const absl::Status&) {});
      return answer(absl::AbortedError(absl::StrFormat(
          "%s, read by transaction %x, was freed meanwhile and its slot reallocated", known->ptr_.ToString(), id_)));
    }
    TxObject* object = Insert(*p);
    object->allocated_ = true;
    object->written_ = true;
    object->raw_ = raw;
    if (!raw) object->data_.assign(size, '\0');  // a one-sided object's bytes are zeroed in place
    answer(object);
  });
}

absl::Status Transaction::Write(TxObject* object) {
  if (absl::Status s = CheckOwned(object); !s.ok()) return s;
  object->written_ = true;
  return absl::OkStatus();
}

uint64_t Transaction::WriteBytes() const {
  uint64_t bytes = 0;
  for (const std::unique_ptr<TxObject>& o : objects_) {
    if (o->allocated_ && o->freed_) continue;  // never visible (MakePlan skips it)
    if (!o->written_ && !o->freed_) continue;
    bytes += kLogEntryHeaderBytes + (o->freed_ || o->raw_ ? 0 : o->data_.size());  // CarriesPayload
  }
  return bytes;
}

absl::Status Transaction::IncrementIncarnation(TxObject* object) {
  if (absl::Status s = CheckOwned(object); !s.ok()) return s;
  // An object allocated here has no older pointers (nobody has its address yet).
  if (object->allocated_) return absl::OkStatus();
  object->written_ = true;
  object->new_incarnation_ = true;
  return absl::OkStatus();
}

absl::Status Transaction::Free(FatPtr p) { return FreeImpl(p, /*raw=*/false); }

absl::Status Transaction::FreeRaw(FatPtr p) { return FreeImpl(p, /*raw=*/true); }

absl::Status Transaction::FreeImpl(FatPtr p, bool raw) {
  if (absl::Status s = CheckActive(); !s.ok()) return s;
  if (p.is_null()) return absl::InvalidArgumentError("free of a null pointer");
  TxObject* object = Find(p.addr);
  if (object == nullptr) {
    object = Insert(p);
  } else if (object->ptr_ != p) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s was read by this transaction as %s", p.ToString(), object->ptr_.ToString()));
  } else if (object->freed_) {
    return absl::FailedPreconditionError(absl::StrFormat("%s is freed twice", p.ToString()));
  } else if (object->raw_ != raw) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s was allocated by this transaction as a%s object", p.ToString(), object->raw_ ? " one-sided" : " transactional"));
  }
  object->freed_ = true;
  object->raw_ = raw;
  return absl::OkStatus();
}

void Transaction::Abort() {
  if (state_ != State::kActive) return;
  Finish(absl::AbortedError("aborted by the application"));
}

void Transaction::Finish(const absl::Status& status, bool outcome_known) {
  state_ = status.ok() ? State::kCommitted : State::kAborted;
  for (const std::unique_ptr<TxObject>& o : objects_) {
    // Objects allocated by a transaction that did not commit were never visible.
    // A freed allocation is freed either way.
    if (o->allocated_ && outcome_known && (!status.ok() || o->freed_)) {
      ctx_->allocator().Free(o->ptr_, [](const absl::Status&) {});
    }
  }
  ctx_->allocator().epoch().Exit();
  TxStats& stats = ctx_->stats();
  if (status.ok()) {
    ++stats.committed;
  } else {
    ++stats.aborted;
  }
  if (done_) {
    TxDone done = std::move(done_);
    done(status);
  }
}

}  // namespace farm::tx
