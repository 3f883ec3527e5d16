#include "kv/resp/cached_key_ops.h"

#include <utility>

namespace farm::kv::resp {

void CachedKeyOps::Load(absl::AnyInvocable<void(absl::Status)> then) {
  if (loaded_) return then(absl::OkStatus());
  txn_->Get(key_, [this, then = std::move(then)](absl::StatusOr<Value> v) mutable {
    if (!v.ok()) return then(v.status());
    if (!loaded_) {  // a blind Put may have filled the cache meanwhile: it wins
      loaded_ = true;
      value_ = std::move(*v);
    }
    then(absl::OkStatus());
  });
}

void CachedKeyOps::Get(absl::string_view key, Done<absl::StatusOr<Value>> done) {
  if (key != key_) {
    return WriteBack([this, key, done = std::move(done)](absl::Status s) mutable {
      if (!s.ok()) return done(s);
      txn_->Get(key, std::move(done));
    });
  }
  Load([this, done = std::move(done)](absl::Status s) mutable {
    if (!s.ok()) return done(s);
    done(value_);
  });
}

void CachedKeyOps::MultiGet(absl::Span<const std::string> keys,
                            Done<absl::StatusOr<std::vector<Value>>> done) {
  WriteBack([this, keys, done = std::move(done)](absl::Status s) mutable {
    if (!s.ok()) return done(s);
    loaded_ = false;  // read through the transaction from now on
    txn_->MultiGet(keys, std::move(done));
  });
}

void CachedKeyOps::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  if (key != key_) {
    return WriteBack([this, key, value, done = std::move(done)](absl::Status s) mutable {
      if (!s.ok()) return done(s);
      txn_->Put(key, value, std::move(done));
    });
  }
  loaded_ = true;  // a blind write: no need to read the old value
  dirty_ = true;
  value_.emplace(value);
  done(absl::OkStatus());
}

void CachedKeyOps::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  if (key != key_) {
    return WriteBack([this, key, done = std::move(done)](absl::Status s) mutable {
      if (!s.ok()) return done(s);
      txn_->Remove(key, std::move(done));
    });
  }
  Load([this, done = std::move(done)](absl::Status s) mutable {
    if (!s.ok()) return done(s);
    const bool existed = value_.has_value();
    if (existed) {
      value_.reset();
      dirty_ = true;
    }
    done(existed);
  });
}

void CachedKeyOps::Increment(absl::string_view key, int64_t delta,
                             Done<absl::StatusOr<int64_t>> done) {
  WriteBack([this, key, delta, done = std::move(done)](absl::Status s) mutable {
    if (!s.ok()) return done(s);
    if (key == key_) loaded_ = false;  // the transaction holds the value now
    txn_->Increment(key, delta, std::move(done));
  });
}

void CachedKeyOps::WriteBack(Done<absl::Status> done) {
  if (!dirty_) return done(absl::OkStatus());
  dirty_ = false;
  if (value_.has_value()) return txn_->Put(key_, *value_, std::move(done));
  txn_->Remove(key_, [done = std::move(done)](absl::StatusOr<bool> r) mutable { done(r.status()); });
}

}  // namespace farm::kv::resp
