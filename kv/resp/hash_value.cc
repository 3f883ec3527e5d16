#include "kv/resp/hash_value.h"

#include "kv/resp/store_replies.h"

namespace farm::kv::resp {
namespace {

// Up to this many fields a linear scan beats building an index.
constexpr size_t kLinearFields = 16;

}  // namespace

absl::Status HashValue::Load(const Value& stored) {
  if (!stored.has_value()) {
    Clear();
    return absl::OkStatus();
  }
  absl::StatusOr<TypedView> typed = DecodeStored(*stored);
  if (!typed.ok()) return typed.status();
  if (typed->type != ValueType::kHash) return WrongTypeError();
  return LoadBody(typed->body);
}

absl::Status HashValue::LoadBody(absl::string_view body) {
  Clear();
  return DecodeHash(body, &pairs_);
}

void HashValue::Clear() {
  pairs_.clear();
  index_.clear();
  indexed_ = 0;
}

std::optional<size_t> HashValue::IndexOf(absl::string_view field) {
  if (pairs_.size() <= kLinearFields) {
    for (size_t i = 0; i < pairs_.size(); ++i) {
      if (pairs_[i].first == field) return i;
    }
    return std::nullopt;
  }
  if (indexed_ != pairs_.size()) {
    index_.clear();
    index_.reserve(pairs_.size());
    for (size_t i = 0; i < pairs_.size(); ++i) index_.try_emplace(pairs_[i].first, i);
    indexed_ = pairs_.size();
  }
  auto it = index_.find(field);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<absl::string_view> HashValue::Get(absl::string_view field) {
  std::optional<size_t> i = IndexOf(field);
  if (!i) return std::nullopt;
  return pairs_[*i].second;
}

bool HashValue::Set(absl::string_view field, absl::string_view value) {
  if (std::optional<size_t> i = IndexOf(field)) {
    pairs_[*i].second = value;
    return false;
  }
  pairs_.emplace_back(field, value);
  if (indexed_ > 0 && indexed_ == pairs_.size() - 1) {
    index_.try_emplace(field, pairs_.size() - 1);
    ++indexed_;
  }
  return true;
}

bool HashValue::Remove(absl::string_view field) {
  std::optional<size_t> i = IndexOf(field);
  if (!i) return false;
  pairs_.erase(pairs_.begin() + static_cast<ptrdiff_t>(*i));
  index_.clear();  // positions moved: rebuilt on the next lookup that needs it
  indexed_ = 0;
  return true;
}

}  // namespace farm::kv::resp
