#include "tx/recent_commits.h"

#include <utility>

namespace farm::tx {

void RecentCommits::Add(uint64_t transaction, absl::Time now) {
  MutexLock lock(&mu_);
  if (current_since_ == absl::InfinitePast()) current_since_ = now;
  if (now - current_since_ >= keep_) {
    previous_ = std::move(current_);
    current_.clear();
    current_since_ = now;
  }
  current_.insert(transaction);
}

bool RecentCommits::Contains(uint64_t transaction) const {
  MutexLock lock(&mu_);
  return current_.contains(transaction) || previous_.contains(transaction);
}

size_t RecentCommits::size() const {
  MutexLock lock(&mu_);
  return current_.size() + previous_.size();
}

}  // namespace farm::tx
