// Number generators of YCSB's CoreWorkload (site.ycsb.generator), ported to C++.
//
// Each generator draws from a Random64 the caller passes in, so a client thread owns
// one Random64 and one instance of each generator it uses: the same seed gives the same
// sequence, and nothing on the hot path takes a lock. The exception is the insert
// sequence (CounterGenerator, AcknowledgedCounterGenerator), which all client threads
// of a run share: it is atomic.
//
// Values are int64_t item numbers, as YCSB's longs.
#ifndef FARM_TOOLS_YCSB_GENERATORS_H_
#define FARM_TOOLS_YCSB_GENERATORS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tools/ycsb/random.h"

namespace farm::ycsb {

// YCSB's Utils.fnvhash64: FNV-1a over the 8 bytes of `value`, low byte first. YCSB
// then takes Math.abs of the signed result; callers here take the unsigned value
// modulo their range instead, which differs only in which item a hash lands on.
uint64_t FnvHash64(uint64_t value);

// UniformLongGenerator: every integer in [lb, ub] equally likely.
class UniformLongGenerator {
 public:
  UniformLongGenerator(int64_t lb, int64_t ub) : lb_(lb), interval_(ub - lb + 1) {}
  int64_t Next(Random64& rng) const {
    return lb_ + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(interval_)));
  }

 private:
  int64_t lb_;
  int64_t interval_;  // >= 1
};

// zeta(n, theta) = sum_{i=1..n} 1 / i^theta, exactly (O(n)).
double Zeta(int64_t n, double theta);
// zeta(to, theta) given zeta(from, theta) = `zeta_from`, adding the terms from+1..to.
double ZetaIncrement(int64_t from, int64_t to, double theta, double zeta_from);
// zeta(n, theta) for any n in O(1e6): exact terms up to 1e6, Euler-Maclaurin for the
// rest (relative error below 1e-12 for theta in (0, 1)). Used for YCSB's 10^10-item
// scrambled zipfian when theta is not the 0.99 YCSB tabulated.
double ZetaFast(int64_t n, double theta);

// ZipfianGenerator: YCSB's zipfian over items [min, min + n), after Gray et al., "Quickly
// Generating Billion-Record Synthetic Databases" (SIGMOD 1994). Item min is the most
// popular: P(min) = 1 / zeta(n, theta), P(min + 1) = 2^-theta / zeta(n, theta), and
// in general P(min + i) ~ (i + 1)^-theta / zeta(n, theta) (exact for the first two
// ranks, Gray's approximation beyond).
//
// zeta(n, theta) is computed once at construction (or passed in); Next(rng, count) with
// a larger count than the last call extends it incrementally, as YCSB's nextLong(count)
// does when records are inserted. Copyable: a prototype built once per run is copied
// into every client thread. Not thread-safe.
class ZipfianGenerator {
 public:
  static constexpr double kDefaultTheta = 0.99;  // YCSB's ZIPFIAN_CONSTANT

  // Items min..max inclusive (max >= min); computes zeta(max - min + 1, theta).
  ZipfianGenerator(int64_t min, int64_t max, double theta = kDefaultTheta);
  // As above with zeta(max - min + 1, theta) given.
  ZipfianGenerator(int64_t min, int64_t max, double theta, double zetan);

  // An item in [min, min + items()).
  int64_t Next(Random64& rng) { return Next(rng, count_for_zeta_); }
  // An item in [min, min + item_count) for item_count >= 1; zeta follows item_count.
  int64_t Next(Random64& rng, int64_t item_count);

  int64_t items() const { return count_for_zeta_; }
  double zetan() const { return zetan_; }
  double theta() const { return theta_; }

 private:
  void SetZetan(int64_t item_count, double zetan);

  int64_t base_;
  double theta_;
  double zeta2theta_;
  double alpha_;
  double half_pow_theta_;  // 0.5^theta: P(min + 1) = half_pow_theta_ / zetan_
  int64_t count_for_zeta_;
  double zetan_;
  double eta_;
};

// ScrambledZipfianGenerator: YCSB's way to spread zipfian popularity over the key
// space: a zipfian over 10^10 items, hashed with FnvHash64, modulo the item count. The
// popular items are scattered instead of clustered at min; several of the 10^10 items
// may land on the same item, so the skew is close to, not exactly, zipfian(theta).
class ScrambledZipfianGenerator {
 public:
  static constexpr int64_t kItemCount = 10'000'000'000LL;  // YCSB's ITEM_COUNT
  static constexpr double kZetan = 26.46902820178302;      // zeta(10^10, 0.99), YCSB's

  // zeta(kItemCount + 1, theta): YCSB's constant for 0.99, else computed (~20 ms).
  static double Zetan(double theta);

  // Items min..max inclusive.
  ScrambledZipfianGenerator(int64_t min, int64_t max,
                            double theta = ZipfianGenerator::kDefaultTheta)
      : ScrambledZipfianGenerator(min, max, theta, Zetan(theta)) {}
  // As above with Zetan(theta) given.
  ScrambledZipfianGenerator(int64_t min, int64_t max, double theta, double zetan);
  int64_t Next(Random64& rng) {
    return min_ + static_cast<int64_t>(FnvHash64(static_cast<uint64_t>(gen_.Next(rng))) %
                                       static_cast<uint64_t>(item_count_));
  }

 private:
  int64_t min_;
  int64_t item_count_;
  ZipfianGenerator gen_;
};

// HotspotGenerator: YCSB's HotspotIntegerGenerator. A fraction `hot_set` of [lb, ub]
// (its low end) receives a fraction `hot_ops` of the draws, uniformly; the rest go
// uniformly to the other items.
class HotspotGenerator {
 public:
  HotspotGenerator(int64_t lb, int64_t ub, double hot_set, double hot_ops);
  int64_t Next(Random64& rng) const;

 private:
  int64_t lb_;
  int64_t hot_interval_;
  int64_t cold_interval_;
  double hot_ops_;
};

// AcknowledgedCounterGenerator: YCSB's insert key sequence for the transaction phase.
// Next() hands out start, start+1, ... (atomic fetch-add; any thread). A client calls
// Acknowledge(v) once the insert of v has completed; Last() is the largest v such that
// every value in [start, v] has been acknowledged (start - 1 before any), so a reader
// choosing keys <= Last() only picks records that exist.
//
// Invariants:
//   1. slot[v % kWindow] is true from Acknowledge(v) until Last() has passed v. Values
//      in (Last(), Last() + kWindow] have distinct slots; Acknowledge(v) of a v beyond
//      that, or whose slot is still taken, reports ResourceExhausted (more than kWindow
//      inserts outstanding; YCSB throws).
//   2. Only the holder of `advancing_` moves `limit_` and clears slots. A thread that
//      marks its slot and fails to take `advancing_` leaves the work to the holder,
//      which re-checks the next slot after releasing (both sides sequentially
//      consistent), so Last() never stalls behind an acknowledged value.
class AcknowledgedCounterGenerator {
 public:
  static constexpr int64_t kWindow = 1 << 20;  // YCSB's WINDOW_SIZE

  explicit AcknowledgedCounterGenerator(int64_t start);

  int64_t Next() { return next_.fetch_add(1, std::memory_order_relaxed); }
  absl::Status Acknowledge(int64_t value);
  int64_t Last() const { return limit_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> next_;
  std::atomic<int64_t> limit_;
  std::atomic<bool> advancing_{false};
  std::unique_ptr<std::atomic<bool>[]> slots_;
};

// SkewedLatestGenerator: YCSB's "latest" distribution. Draws Last() - z where z is
// zipfian over [0, Last() - start + 1) (the records that exist), so the most recently
// inserted record is the most popular. YCSB draws z over Last() items, which never
// picks record 0; this covers every record. Holds a reference to `basis`, which must
// outlive it.
class SkewedLatestGenerator {
 public:
  // `zipfian` is a prototype over [0, n) for the initial record count n.
  SkewedLatestGenerator(const AcknowledgedCounterGenerator& basis, int64_t start,
                        ZipfianGenerator zipfian)
      : basis_(&basis), start_(start), zipfian_(std::move(zipfian)) {}
  int64_t Next(Random64& rng) {
    const int64_t last = basis_->Last();
    return last - zipfian_.Next(rng, last - start_ + 1);
  }

 private:
  const AcknowledgedCounterGenerator* basis_;
  int64_t start_;
  ZipfianGenerator zipfian_;
};

// DiscreteGenerator: picks one of a few values with given (unnormalised) weights;
// YCSB's operation chooser.
template <typename T>
class DiscreteGenerator {
 public:
  void Add(T value, double weight) {
    if (weight <= 0) return;
    total_ += weight;
    entries_.push_back({value, total_});
  }
  bool empty() const { return entries_.empty(); }
  // Requires !empty().
  T Next(Random64& rng) const {
    const double u = rng.NextDouble() * total_;
    for (const Entry& e : entries_) {
      if (u < e.cumulative) return e.value;
    }
    return entries_.back().value;
  }

 private:
  struct Entry {
    T value;
    double cumulative;
  };
  std::vector<Entry> entries_;
  double total_ = 0;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_GENERATORS_H_
