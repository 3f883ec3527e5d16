#include "tx/retained_commits.h"

#include <algorithm>
#include <utility>

namespace farm::tx {
namespace {

uint64_t StreamKey(NodeId sender, uint16_t thread) { return (uint64_t{sender} << 16) | thread; }
NodeId SenderOf(uint64_t key) { return static_cast<NodeId>(key >> 16); }

}  // namespace

void ApplySequencer::End(uint64_t sequence) {
  if (sequence < first_ || sequence - first_ >= open_.size()) return;
  open_[sequence - first_] = true;
  while (!open_.empty() && open_.front()) {
    open_.pop_front();
    ++first_;
  }
}

size_t ApplySequencer::open() const { return static_cast<size_t>(std::count(open_.begin(), open_.end(), false)); }

RetainedCommits::Stream* RetainedCommits::Admit(NodeId sender, uint16_t sender_thread, uint64_t sequence,
                                                uint64_t watermark, Position* at) {
  Stream& s = streams_[StreamKey(sender, sender_thread)];
  while (!s.records.empty() && s.records.front().first < watermark) {
    std::string& dropped = s.records.front().second;
    if (spare_.size() < kMaxSpare && dropped.capacity() <= kMaxSpareCapacity) spare_.push_back(std::move(dropped));
    s.records.pop_front();
    --size_;
  }
  if (sequence < watermark) return nullptr;  // a late copy of a record every backup has
  *at = std::lower_bound(s.records.begin(), s.records.end(), sequence,
                         [](const auto& kept, uint64_t seq) { return kept.first < seq; });
  if (*at != s.records.end() && (*at)->first == sequence) return nullptr;
  return &s;
}

void RetainedCommits::Retain(NodeId sender, uint16_t sender_thread, uint64_t sequence, uint64_t watermark,
                             std::string record) {
  Position at;
  Stream* s = Admit(sender, sender_thread, sequence, watermark, &at);
  if (s == nullptr) return;
  s->records.emplace(at, sequence, std::move(record));
  ++size_;
}

void RetainedCommits::Retain(NodeId sender, uint16_t sender_thread, uint64_t sequence, uint64_t watermark,
                             absl::string_view record) {
  Position at;
  Stream* s = Admit(sender, sender_thread, sequence, watermark, &at);
  if (s == nullptr) return;
  std::string bytes;
  if (!spare_.empty()) {
    bytes = std::move(spare_.back());
    spare_.pop_back();
  }
  bytes.assign(record.data(), record.size());
  s->records.emplace(at, sequence, std::move(bytes));
  ++size_;
}

std::vector<absl::string_view> RetainedCommits::Touching(const absl::flat_hash_set<RegionId>& regions) const {
  std::vector<std::pair<uint64_t, const Stream*>> streams;
  streams.reserve(streams_.size() + departed_.size());
  for (const SetAside& d : departed_) streams.emplace_back(d.key, &d.stream);
  std::vector<std::pair<uint64_t, const Stream*>> live;
  for (const auto& [key, s] : streams_) live.emplace_back(key, &s);
  std::sort(live.begin(), live.end());
  streams.insert(streams.end(), live.begin(), live.end());
  std::vector<absl::string_view> out;
  LogRecordView view;
  for (const auto& [key, s] : streams) {
    for (const auto& [sequence, record] : s->records) {
      // Decoded when it arrived: it decodes again.
      if (!DecodeLogRecordView(record, &view).ok()) continue;
      if (std::any_of(view.entries.begin(), view.entries.end(),
                      [&](const LogEntryView& e) { return regions.contains(e.address.region()); })) {
        out.push_back(record);
      }
    }
  }
  return out;
}

void RetainedCommits::Departed(const absl::flat_hash_set<NodeId>& departed, absl::Time now,
                               absl::Duration forget_after) {
  std::vector<uint64_t> keys;
  for (const auto& [key, s] : streams_) {
    if (departed.contains(SenderOf(key))) keys.push_back(key);
  }
  std::sort(keys.begin(), keys.end());
  for (uint64_t key : keys) {
    auto it = streams_.find(key);
    departed_.push_back(SetAside{now + forget_after, key, std::move(it->second)});
    streams_.erase(it);
  }
}

void RetainedCommits::Purge(absl::Time now) {
  std::erase_if(departed_, [&](const SetAside& d) {
    if (d.forget_at > now) return false;
    size_ -= d.stream.records.size();
    return true;
  });
}

}  // namespace farm::tx
