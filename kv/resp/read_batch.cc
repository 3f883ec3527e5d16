#include "kv/resp/read_batch.h"

#include <utility>

namespace farm::kv::resp {

// One batch: requests in the order asked, the unique keys MultiGet reads.
struct ReadBatch::Gathered {
  struct Request {
    absl::string_view key;                // a Get's key
    absl::Span<const std::string> keys;   // a MultiGet's keys
    bool multi = false;
    uint32_t first = 0;                   // its first entry in slot_of
    Done<absl::StatusOr<Value>> one;
    Done<absl::StatusOr<std::vector<Value>>> many;
  };

  std::vector<Request> requests;
  std::vector<std::string> keys;  // unique keys in [0, key_count); storage reused
  size_t key_count = 0;
  std::vector<uint32_t> slot_of;  // each requested key's index in keys
  std::vector<uint32_t> uses;     // per unique key: requests left to hand it to
  absl::flat_hash_map<absl::string_view, uint32_t> index;  // callers' views -> slot

  uint32_t Slot(absl::string_view key) {
    auto [it, inserted] = index.try_emplace(key, static_cast<uint32_t>(key_count));
    if (inserted) {
      if (keys.size() == key_count) keys.emplace_back();
      keys[key_count].assign(key.data(), key.size());
      uses.push_back(0);
      ++key_count;
    }
    ++uses[it->second];
    return it->second;
  }

  void Clear() {
    requests.clear();
    key_count = 0;
    slot_of.clear();
    uses.clear();
    index.clear();
  }
};

struct ReadBatch::Pool {
  static constexpr size_t kMax = 4;
  std::vector<std::unique_ptr<Gathered>> spare;

  void Recycle(std::unique_ptr<Gathered> g) {
    if (spare.size() >= kMax) return;
    g->Clear();
    spare.push_back(std::move(g));
  }
};

namespace {

using Value = ReadBatch::Value;

// Hands slot `slot` of `values` to one more caller: the last one gets it moved.
Value Take(std::vector<Value>& values, std::vector<uint32_t>& uses, uint32_t slot) {
  if (--uses[slot] == 0) return std::move(values[slot]);
  return values[slot];
}

}  // namespace

ReadBatch::ReadBatch(Store* store)
    : store_(store), pool_(std::make_shared<Pool>()), stats_(std::make_shared<Stats>()) {}

ReadBatch::~ReadBatch() = default;

ReadBatch::Gathered& ReadBatch::Current() {
  if (current_ == nullptr) {
    if (!pool_->spare.empty()) {
      current_ = std::move(pool_->spare.back());
      pool_->spare.pop_back();
    } else {
      current_ = std::make_unique<Gathered>();
    }
  }
  return *current_;
}

void ReadBatch::Get(absl::string_view key, Done<absl::StatusOr<Value>> done) {
  ++stats_->requests;
  if (!gathering_) return store_->Get(key, std::move(done));
  Gathered& g = Current();
  Gathered::Request& r = g.requests.emplace_back();
  r.key = key;
  r.first = static_cast<uint32_t>(g.slot_of.size());
  r.one = std::move(done);
  g.slot_of.push_back(g.Slot(key));
}

void ReadBatch::MultiGet(absl::Span<const std::string> keys,
                         Done<absl::StatusOr<std::vector<Value>>> done) {
  ++stats_->requests;
  if (!gathering_) return store_->MultiGet(keys, std::move(done));
  Gathered& g = Current();
  Gathered::Request& r = g.requests.emplace_back();
  r.keys = keys;
  r.multi = true;
  r.first = static_cast<uint32_t>(g.slot_of.size());
  r.many = std::move(done);
  for (const std::string& key : keys) g.slot_of.push_back(g.Slot(key));
}

void ReadBatch::Flush() {
  gathering_ = false;
  if (current_ == nullptr) return;
  std::unique_ptr<Gathered> g = std::move(current_);
  if (g->requests.size() == 1) {  // nothing to combine: the request as it was asked
    Gathered::Request& r = g->requests[0];
    if (r.multi) {
      store_->MultiGet(r.keys, std::move(r.many));
    } else {
      store_->Get(r.key, std::move(r.one));
    }
    pool_->Recycle(std::move(g));
    return;
  }
  if (g->requests.empty()) return pool_->Recycle(std::move(g));
  const absl::Span<const std::string> keys(g->keys.data(), g->key_count);
  ++stats_->batches;
  stats_->batched += g->requests.size();
  stats_->keys += g->key_count;
  store_->MultiGet(keys, [store = store_, pool = pool_, stats = stats_, g = std::move(g)](
                             absl::StatusOr<std::vector<Value>> values) mutable {
    if (!values.ok()) {
      ++stats->retried;
      // Each caller's lookup again on its own: errors reach only those they belong to.
      for (Gathered::Request& r : g->requests) {
        if (r.multi) {
          store->MultiGet(r.keys, std::move(r.many));
        } else {
          store->Get(r.key, std::move(r.one));
        }
      }
    } else {
      for (Gathered::Request& r : g->requests) {
        if (!r.multi) {
          r.one(Take(*values, g->uses, g->slot_of[r.first]));
          continue;
        }
        std::vector<Value> out;
        out.reserve(r.keys.size());
        for (size_t i = 0; i < r.keys.size(); ++i) {
          out.push_back(Take(*values, g->uses, g->slot_of[r.first + i]));
        }
        r.many(std::move(out));
      }
    }
    pool->Recycle(std::move(g));
  });
}

}  // namespace farm::kv::resp
