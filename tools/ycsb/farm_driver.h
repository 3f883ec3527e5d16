// FarmDriver: one application thread of the YCSB run inside a FaRM cluster (the paper's
// setup, section 6): it lives on a worker thread of a node and drives the key-value
// store through that thread's kv::KvClient (any table layout), keeping `window` operations in flight,
// each started when another completes (event-driven, no blocking).
//
// Operations: read = a lock-free lookup; update and insert = a put shipped to the
// key's primary; read-modify-write = a lookup, then a put; scan = a multi-get of the
// scan's keys. Every value read is checked to belong to its key (an error otherwise).
// Counting follows op_stats.h; latency is from an operation's start to its completion.
//
// Threads: constructed anywhere; Load and Run are called on the client's worker thread,
// and everything they start runs there. The coordinator on another thread reads only
// the shared DriverControl; it reads stats() and load_status() after the driver has
// reported itself finished (DriverControl::running, release/acquire).
#ifndef FARM_TOOLS_YCSB_FARM_DRIVER_H_
#define FARM_TOOLS_YCSB_FARM_DRIVER_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kv/kv_client.h"
#include "tools/ycsb/op_generator.h"
#include "tools/ycsb/op_stats.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {

enum class DriverPhase : int { kWarmup, kMeasure, kStop };

// What the coordinator and the drivers share.
struct DriverControl {
  std::atomic<DriverPhase> phase{DriverPhase::kMeasure};
  std::atomic<int64_t> loaded{0};  // records inserted by the load so far
  std::atomic<int> running{0};     // drivers that have not finished their phase
};

class FarmDriver {
 public:
  FarmDriver(kv::KvClient& client, CoreWorkload& workload, uint64_t seed, int window,
             DriverControl* control);
  FarmDriver(const FarmDriver&) = delete;
  FarmDriver& operator=(const FarmDriver&) = delete;

  // Inserts records [begin, end), `window` at a time; stops issuing at the first
  // failure (load_status()). Decrements control->running when done.
  void Load(int64_t begin, int64_t end);
  // Runs operations until the phase is kStop, or, when `quota` >= 0, until `quota`
  // operations have run (none for 0); measures those started in kMeasure. Decrements
  // control->running when the last one in flight has completed.
  void Run(int64_t quota);

  const OpStats& stats() const { return stats_; }
  const absl::Status& load_status() const { return load_status_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    Op op;
    DriverPhase phase = DriverPhase::kMeasure;  // when the op started
    Clock::time_point start;
    std::vector<char> key;
    std::vector<char> value;
    KeyBatch batch;
    std::vector<std::string> scan_keys;
    Slot(size_t key_bytes, size_t value_bytes, size_t max_scan)
        : key(key_bytes), value(value_bytes), batch(max_scan, key_bytes) {}
  };

  absl::string_view KeyOf(Slot& s, int64_t keynum) { return gen_.Key(keynum, absl::MakeSpan(s.key)); }
  absl::string_view ValueOf(Slot& s, int64_t keynum) { return gen_.Value(keynum, absl::MakeSpan(s.value)); }

  void LoadNext(Slot* s);
  void OnLoaded(Slot* s, const absl::Status& status);
  // Starts the slot's next operation, or retires the slot.
  void Issue(Slot* s);
  void Put(Slot* s);
  void Read(Slot* s);
  void Scan(Slot* s);
  // An operation finished: `error` (not OK: failed), `not_found`.
  void Complete(Slot* s, const absl::Status& error, bool not_found);
  void Retire();

  kv::KvClient& client_;
  OpGenerator gen_;
  DriverControl* const control_;
  std::vector<std::unique_ptr<Slot>> slots_;
  int in_flight_ = 0;
  // Load: the next record and the end; Run: operations issued and the quota (< 0: none).
  int64_t next_ = 0;
  int64_t end_ = 0;
  int64_t issued_ = 0;
  int64_t quota_ = -1;
  absl::Status load_status_;
  OpStats stats_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_FARM_DRIVER_H_
