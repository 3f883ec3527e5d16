#include "kv/update_queue.h"

#include <utility>

#include "absl/hash/hash.h"

namespace farm::kv {
namespace {

uint64_t KeyHash(absl::string_view key) { return absl::HashOf(key); }

}  // namespace

size_t UpdateBatch::remaining_updates() const { return first_[key_count_] - first_[done_]; }

absl::Span<const Message> UpdateBatch::reply_to(size_t k) const {
  const size_t key = done_ + k;
  return absl::MakeConstSpan(reply_to_).subspan(first_[key], first_[key + 1] - first_[key]);
}

void UpdateBatch::Reset(size_t keys, size_t updates) {
  key_count_ = keys;
  op_count_ = updates;
  done_ = 0;
  if (names_.size() < keys) names_.resize(keys);
  if (keys_.size() < keys) keys_.resize(keys);
  first_.resize(keys + 1);
  if (ops_.size() < updates) ops_.resize(updates);
  if (reply_to_.size() < updates) reply_to_.resize(updates);
}

void UpdateBatch::BuildViews() {
  for (size_t k = 0; k < key_count_; ++k) {
    KeyUpdates& u = keys_[k];
    u.key = names_[k];
    u.ops = absl::MakeConstSpan(ops_).subspan(first_[k], first_[k + 1] - first_[k]);
    u.results.clear();
  }
}

void UpdateBatch::MoveTailTo(size_t n, UpdateBatch& other) {
  const size_t from = key_count_ - n;
  const size_t op_from = first_[from];
  other.Reset(n, op_count_ - op_from);
  for (size_t k = 0; k < n; ++k) {
    std::swap(other.names_[k], names_[from + k]);
    other.first_[k] = first_[from + k] - op_from;
  }
  other.first_[n] = op_count_ - op_from;
  for (size_t i = op_from; i < op_count_; ++i) {
    std::swap(other.ops_[i - op_from], ops_[i]);
    other.reply_to_[i - op_from] = reply_to_[i];
  }
  other.BuildViews();
  key_count_ = from;
  op_count_ = op_from;
  first_.resize(key_count_ + 1);
}

void UpdateQueue::Push(const UpdateRequest& request, const Message& message) {
  if (size_ == waiting_.size()) waiting_.emplace_back();
  Waiting& w = waiting_[size_++];
  w.key.assign(request.key.data(), request.key.size());
  w.op.kind = request.kind;
  w.op.value.assign(request.value.data(), request.value.size());
  w.op.delta = request.delta;
  w.reply_to = message;
  w.reply_to.payload = {};
}

bool UpdateQueue::Busy(absl::string_view key) const { return busy_.contains(KeyHash(key)); }

void UpdateQueue::MarkBusy(absl::string_view key) { ++busy_[KeyHash(key)]; }

void UpdateQueue::Release(absl::string_view key) {
  auto it = busy_.find(KeyHash(key));
  if (it == busy_.end()) return;
  if (--it->second == 0) busy_.erase(it);
}

void UpdateQueue::TakeBatch(size_t max_keys, UpdateBatch& batch) {
  // Pass 1: a group per key picked (invariant 2), kStays for the others.
  group_.clear();
  group_of_.resize(size_);
  next_.clear();
  size_t taken = 0;
  for (size_t i = 0; i < size_; ++i) {
    const absl::string_view key = waiting_[i].key;
    auto [it, fresh] = group_.try_emplace(key, kStays);
    if (fresh && next_.size() < max_keys && !Busy(key)) {
      it->second = static_cast<uint32_t>(next_.size());
      next_.push_back(0);
    }
    group_of_[i] = it->second;
    if (it->second != kStays) {
      ++next_[it->second];
      ++taken;
    }
  }
  group_.clear();  // its views are about to move
  const size_t keys = next_.size();
  batch.Reset(keys, taken);
  if (keys == 0) return;
  // Pass 2: each key's updates contiguous, in arrival order (invariant 3); the rest
  // move forward, in order.
  size_t offset = 0;
  for (size_t g = 0; g < keys; ++g) {
    batch.first_[g] = offset;
    offset += next_[g];
    next_[g] = batch.first_[g];
  }
  batch.first_[keys] = offset;
  size_t stays = 0;
  for (size_t i = 0; i < size_; ++i) {
    Waiting& w = waiting_[i];
    const uint32_t g = group_of_[i];
    if (g == kStays) {
      if (stays != i) std::swap(waiting_[stays], w);
      ++stays;
      continue;
    }
    const size_t at = next_[g]++;
    if (at == batch.first_[g]) std::swap(batch.names_[g], w.key);
    std::swap(batch.ops_[at], w.op);
    batch.reply_to_[at] = w.reply_to;
  }
  size_ = stays;
  batch.BuildViews();
  for (size_t g = 0; g < keys; ++g) MarkBusy(batch.names_[g]);
}

}  // namespace farm::kv
