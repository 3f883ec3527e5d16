#include "tests/kv/resp/fake_store.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace farm::kv::testing {
namespace {

bool StrictInt64(absl::string_view s, int64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  if (s[0] == '0' && s.size() > 1) return false;
  if (s[0] == '-' && (s.size() == 1 || s[1] == '0')) return false;
  if (s[0] == '+' || s[0] == ' ') return false;
  for (size_t i = s[0] == '-' ? 1 : 0; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return absl::SimpleAtoi(s, out);
}

absl::StatusOr<int64_t> Add(int64_t current, int64_t delta) {
  int64_t result = 0;
  if (__builtin_add_overflow(current, delta, &result)) {
    return absl::InvalidArgumentError("increment or decrement would overflow");
  }
  return result;
}

}  // namespace

absl::StatusOr<int64_t> ParseStoredInteger(const std::optional<std::string>& value) {
  if (!value.has_value()) return 0;
  int64_t v = 0;
  if (!StrictInt64(*value, &v)) {
    return absl::InvalidArgumentError("value is not an integer or out of range");
  }
  return v;
}

// ------------------------------------------------------------------------------------
// FakeCluster

void FakeCluster::InjectError(absl::Status status, int count) {
  MutexLock lock(&mu_);
  injected_ = std::move(status);
  injected_count_ = count;
}

void FakeCluster::InjectCommitError(absl::Status status, int count) {
  MutexLock lock(&mu_);
  injected_commit_ = std::move(status);
  injected_commit_count_ = count;
}

absl::Status FakeCluster::TakeInjectedCommit() {
  MutexLock lock(&mu_);
  if (injected_commit_count_ <= 0) return absl::OkStatus();
  --injected_commit_count_;
  return injected_commit_;
}

absl::Status FakeCluster::TakeInjected() {
  MutexLock lock(&mu_);
  ++operations_;
  if (injected_count_ <= 0) return absl::OkStatus();
  --injected_count_;
  return injected_;
}

std::optional<std::string> FakeCluster::Peek(const std::string& key) const {
  return Read(key).value;
}

void FakeCluster::Poke(const std::string& key, const std::string& value) { Write(key, value); }

uint64_t FakeCluster::operations() const {
  MutexLock lock(&mu_);
  return operations_;
}

StoreStats FakeCluster::Stats() const {
  MutexLock lock(&mu_);
  StoreStats stats;
  stats.keys = keys_;
  stats.pair_bytes = pair_bytes_;
  stats.memory_bytes = pair_bytes_ + 64 * keys_;
  stats.slots = 16;
  while (stats.slots < 2 * keys_) stats.slots *= 2;
  stats.overflow_blocks = keys_ / 1000;
  return stats;
}

KeyPage FakeCluster::ScanKeys(uint64_t cursor, uint32_t count) const {
  if (cursor >= kScanBuckets) return KeyPage{};
  const uint64_t end = std::min<uint64_t>(kScanBuckets, cursor + std::max<uint32_t>(1, count / 2 + count % 2));
  KeyPage page;
  page.cursor = end == kScanBuckets ? 0 : end;
  MutexLock lock(&mu_);
  for (const auto& [key, entry] : map_) {
    if (!entry.value.has_value()) continue;
    uint64_t hash = 14695981039346656037ull;  // FNV-1a
    for (unsigned char c : key) hash = (hash ^ c) * 1099511628211ull;
    const uint64_t home = hash % kScanBuckets;
    if (home >= cursor && home < end) page.keys.push_back(key);
  }
  return page;
}

absl::Status FakeCluster::CheckSizes(absl::string_view key, const absl::string_view* value) const {
  if (key.size() > limits_.max_key_bytes) return absl::InvalidArgumentError("key too large");
  if (value != nullptr && value->size() > limits_.max_value_bytes) {
    return absl::InvalidArgumentError("value too large");
  }
  return absl::OkStatus();
}

FakeCluster::Versioned FakeCluster::Read(const std::string& key) const {
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  return it == map_.end() ? Versioned{} : it->second;
}

void FakeCluster::Write(const std::string& key, std::optional<std::string> value) {
  MutexLock lock(&mu_);
  WriteLocked(key, std::move(value));
}

void FakeCluster::WriteLocked(const std::string& key, std::optional<std::string> value) {
  Versioned& entry = map_[key];
  if (entry.value.has_value()) {
    --keys_;
    pair_bytes_ -= key.size() + entry.value->size();
  }
  entry.value = std::move(value);
  entry.version = next_version_++;
  if (entry.value.has_value()) {
    ++keys_;
    pair_bytes_ += key.size() + entry.value->size();
  }
}

bool FakeCluster::Remove(const std::string& key) {
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  if (it == map_.end() || !it->second.value.has_value()) return false;
  WriteLocked(key, std::nullopt);
  return true;
}

absl::StatusOr<int64_t> FakeCluster::Increment(const std::string& key, int64_t delta) {
  MutexLock lock(&mu_);
  auto it = map_.find(key);
  absl::StatusOr<int64_t> current =
      ParseStoredInteger(it == map_.end() ? std::nullopt : it->second.value);
  if (!current.ok()) return current.status();
  absl::StatusOr<int64_t> next = Add(*current, delta);
  if (!next.ok()) return next.status();
  WriteLocked(key, absl::StrCat(*next));
  return *next;
}

absl::Status FakeCluster::CommitIf(
    const absl::flat_hash_map<std::string, uint64_t>& reads,
    const absl::flat_hash_map<std::string, std::optional<std::string>>& writes) {
  MutexLock lock(&mu_);
  for (const auto& [key, version] : reads) {
    auto it = map_.find(key);
    const uint64_t now = it == map_.end() ? 0 : it->second.version;
    if (now != version) return absl::AbortedError(absl::StrCat("conflict on key '", key, "'"));
  }
  for (const auto& [key, value] : writes) WriteLocked(key, value);
  return absl::OkStatus();
}

// ------------------------------------------------------------------------------------
// FakeStore

void FakeStore::Schedule(absl::string_view op, absl::string_view key,
                         absl::AnyInvocable<void()> work) {
  ++*pending_;
  absl::AnyInvocable<void()> run = [pending = pending_, work = std::move(work)]() mutable {
    --*pending;
    work();
  };
  const absl::Duration delay = options_.delay ? options_.delay(op, key) : absl::ZeroDuration();
  if (delay > absl::ZeroDuration()) {
    loop_->RunAfter(delay, std::move(run));
  } else {
    loop_->Defer(std::move(run));
  }
}

void FakeStore::Get(absl::string_view key, Done<absl::StatusOr<std::optional<std::string>>> done) {
  Schedule("get", key, [c = cluster_, key, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
    done(c->Read(std::string(key)).value);
  });
}

void FakeStore::MultiGet(absl::Span<const std::string> keys,
                         Done<absl::StatusOr<std::vector<std::optional<std::string>>>> done) {
  const absl::string_view first = keys.empty() ? absl::string_view() : keys[0];
  Schedule("multiget", first, [c = cluster_, keys, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    std::vector<std::optional<std::string>> values;
    for (const std::string& key : keys) {
      if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
      values.push_back(c->Read(key).value);
    }
    done(std::move(values));
  });
}

void FakeStore::Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) {
  Schedule("put", key, [c = cluster_, key, value, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    if (absl::Status s = c->CheckSizes(key, &value); !s.ok()) return done(s);
    c->Write(std::string(key), std::string(value));
    done(absl::OkStatus());
  });
}

void FakeStore::Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) {
  Schedule("remove", key, [c = cluster_, key, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
    done(c->Remove(std::string(key)));
  });
}

void FakeStore::Increment(absl::string_view key, int64_t delta,
                          Done<absl::StatusOr<int64_t>> done) {
  Schedule("increment", key, [c = cluster_, key, delta, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    if (absl::Status s = c->CheckSizes(key, nullptr); !s.ok()) return done(s);
    done(c->Increment(std::string(key), delta));
  });
}

void FakeStore::Stats(Done<absl::StatusOr<StoreStats>> done) {
  Schedule("stats", "", [c = cluster_, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    done(c->Stats());
  });
}

void FakeStore::ScanKeys(uint64_t cursor, uint32_t count, Done<absl::StatusOr<KeyPage>> done) {
  Schedule("scan", "", [c = cluster_, cursor, count, done = std::move(done)]() mutable {
    if (absl::Status s = c->TakeInjected(); !s.ok()) return done(s);
    done(c->ScanKeys(cursor, count));
  });
}

}  // namespace farm::kv::testing
