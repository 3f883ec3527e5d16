#include "tools/ycsb/farm_driver.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace farm::ycsb {

FarmDriver::FarmDriver(kv::KvClient& client, CoreWorkload& workload, uint64_t seed, int window,
                       DriverControl* control)
    : client_(client), gen_(workload, seed), control_(control) {
  const size_t max_scan = static_cast<size_t>(std::max(1, workload.spec().max_scan_length));
  for (int i = 0; i < window; ++i) {
    slots_.push_back(
        std::make_unique<Slot>(gen_.format().max_key_bytes(), gen_.format().value_bytes(), max_scan));
  }
}

// --- Load ---

void FarmDriver::Load(int64_t begin, int64_t end) {
  next_ = begin;
  end_ = end;
  // Every slot in use is counted before any starts: the count reaches zero (Retire)
  // only once the last one has finished.
  const int64_t records = std::max<int64_t>(0, end_ - next_);
  in_flight_ = static_cast<int>(std::min<int64_t>(static_cast<int64_t>(slots_.size()), records));
  if (in_flight_ == 0) return Retire();
  for (int i = 0, n = in_flight_; i < n; ++i) LoadNext(slots_[i].get());
}

void FarmDriver::LoadNext(Slot* s) {
  const int64_t k = next_++;
  s->op = Op{OpType::kInsert, k, 0};
  client_.Update(kv::OpKind::kPut, KeyOf(*s, k), ValueOf(*s, k), 0,
                 [this, s](absl::StatusOr<kv::KeyOpResult> r) {
                   OnLoaded(s, !r.ok() ? r.status() : r->status);
                 });
}

void FarmDriver::OnLoaded(Slot* s, const absl::Status& status) {
  if (!status.ok() && load_status_.ok()) {
    load_status_ = absl::Status(status.code(), absl::StrCat("load: insert of record ", s->op.keynum,
                                                            ": ", status.message()));
  }
  if (status.ok()) control_->loaded.fetch_add(1, std::memory_order_relaxed);
  if (load_status_.ok() && next_ < end_) return LoadNext(s);
  if (--in_flight_ == 0) Retire();
}

// --- Transactions ---

void FarmDriver::Run(int64_t quota) {
  issued_ = 0;
  quota_ = quota;
  in_flight_ = static_cast<int>(slots_.size());  // before any Issue: see Load
  for (auto& s : slots_) Issue(s.get());
}

void FarmDriver::Issue(Slot* s) {
  const DriverPhase phase = control_->phase.load(std::memory_order_relaxed);
  if (phase == DriverPhase::kStop || (quota_ >= 0 && issued_ >= quota_)) {
    if (--in_flight_ == 0) Retire();
    return;
  }
  ++issued_;
  s->op = gen_.Next();
  s->phase = phase;
  s->start = Clock::now();
  switch (s->op.type) {
    case OpType::kRead:
    case OpType::kReadModifyWrite:  // the put follows the read
      return Read(s);
    case OpType::kUpdate:
    case OpType::kInsert:
      return Put(s);
    case OpType::kScan:
      return Scan(s);
  }
  Complete(s, absl::InternalError("unknown operation type"), false);
}

void FarmDriver::Put(Slot* s) {
  const int64_t k = s->op.keynum;
  client_.Update(kv::OpKind::kPut, KeyOf(*s, k), ValueOf(*s, k), 0,
                 [this, s](absl::StatusOr<kv::KeyOpResult> r) {
                   absl::Status error = !r.ok() ? r.status() : r->status;
                   if (s->op.type == OpType::kInsert) {
                     // Acknowledged whatever the outcome, as YCSB does, so Last() moves on.
                     if (absl::Status ack = gen_.AcknowledgeInsert(s->op); error.ok()) error = ack;
                   }
                   Complete(s, error, false);
                 });
}

void FarmDriver::Read(Slot* s) {
  // [this, s] only: the continuation stays within AnyInvocable's inline storage.
  client_.Get(KeyOf(*s, s->op.keynum), [this, s](absl::StatusOr<std::optional<absl::string_view>> r) {
    const int64_t k = s->op.keynum;
    if (!r.ok()) return Complete(s, r.status(), false);
    if (r->has_value() && !gen_.format().ValueBelongsTo(k, **r)) {
      return Complete(s, absl::DataLossError(absl::StrCat("read of record ", k, ": the value is not the record's")),
                      false);
    }
    if (s->op.type == OpType::kReadModifyWrite && r->has_value()) return Put(s);
    Complete(s, absl::OkStatus(), !r->has_value());
  });
}

void FarmDriver::Scan(Slot* s) {
  gen_.ScanKeys(s->op, &s->batch);
  s->scan_keys.resize(s->batch.size());
  for (size_t i = 0; i < s->batch.size(); ++i) {
    const absl::string_view key = s->batch.key(i);
    s->scan_keys[i].assign(key.data(), key.size());
  }
  client_.MultiGet(s->scan_keys, [this, s](absl::StatusOr<std::vector<std::optional<std::string>>> r) {
    if (!r.ok()) return Complete(s, r.status(), false);
    bool missing = false;
    for (size_t i = 0; i < r->size(); ++i) {
      const std::optional<std::string>& v = (*r)[i];
      const int64_t k = s->op.keynum + static_cast<int64_t>(i);
      if (!v.has_value()) {
        missing = true;
      } else if (!gen_.format().ValueBelongsTo(k, *v)) {
        return Complete(s, absl::DataLossError(absl::StrCat("scan: the value of record ", k, " is not the record's")),
                        false);
      }
    }
    Complete(s, absl::OkStatus(), missing);
  });
}

void FarmDriver::Complete(Slot* s, const absl::Status& error, bool not_found) {
  if (s->phase == DriverPhase::kMeasure) {
    if (!error.ok()) {
      stats_.RecordError(s->op.type, error.ToString());
    } else {
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - s->start);
      stats_.Record(s->op.type, static_cast<uint64_t>(ns.count()));
      if (not_found) stats_.RecordNotFound(s->op.type);
    }
  }
  Issue(s);
}

void FarmDriver::Retire() { control_->running.fetch_sub(1, std::memory_order_release); }

}  // namespace farm::ycsb
