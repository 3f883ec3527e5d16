#include "tools/ycsb/generators.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace farm::ycsb {

uint64_t FnvHash64(uint64_t value) {
  constexpr uint64_t kOffsetBasis = 0xCBF29CE484222325ULL;
  constexpr uint64_t kPrime = 1099511628211ULL;
  uint64_t hash = kOffsetBasis;
  for (int i = 0; i < 8; ++i) {
    hash ^= value & 0xff;
    hash *= kPrime;
    value >>= 8;
  }
  return hash;
}

double ZetaIncrement(int64_t from, int64_t to, double theta, double zeta_from) {
  double sum = zeta_from;
  for (int64_t i = from + 1; i <= to; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

double Zeta(int64_t n, double theta) { return ZetaIncrement(0, n, theta, 0.0); }

double ZetaFast(int64_t n, double theta) {
  constexpr int64_t kExactTerms = 1'000'000;
  if (n <= kExactTerms) return Zeta(n, theta);
  const double m = static_cast<double>(kExactTerms);
  const double x = static_cast<double>(n);
  // sum_{i=m+1..n} f(i), f(t) = t^-theta, by Euler-Maclaurin:
  //   integral_m^n f + (f(n) - f(m)) / 2 + (f'(n) - f'(m)) / 12 - (f'''(n) - f'''(m)) / 720
  auto f = [theta](double t) { return std::pow(t, -theta); };
  auto f1 = [theta](double t) { return -theta * std::pow(t, -theta - 1); };
  auto f3 = [theta](double t) {
    return -theta * (theta + 1) * (theta + 2) * std::pow(t, -theta - 3);
  };
  const double integral = theta == 1.0
                              ? std::log(x / m)
                              : (std::pow(x, 1 - theta) - std::pow(m, 1 - theta)) / (1 - theta);
  const double tail = integral + (f(x) - f(m)) / 2 + (f1(x) - f1(m)) / 12 - (f3(x) - f3(m)) / 720;
  return Zeta(kExactTerms, theta) + tail;
}

ZipfianGenerator::ZipfianGenerator(int64_t min, int64_t max, double theta)
    : ZipfianGenerator(min, max, theta, Zeta(max - min + 1, theta)) {}

ZipfianGenerator::ZipfianGenerator(int64_t min, int64_t max, double theta, double zetan)
    : base_(min),
      theta_(theta),
      zeta2theta_(Zeta(2, theta)),
      alpha_(1.0 / (1.0 - theta)),
      half_pow_theta_(std::pow(0.5, theta)) {
  SetZetan(max - min + 1, zetan);
}

void ZipfianGenerator::SetZetan(int64_t item_count, double zetan) {
  count_for_zeta_ = item_count;
  zetan_ = zetan;
  // Only draws past the first two ranks use eta; with n <= 2 there are none (and the
  // denominator below is 0).
  eta_ = item_count <= 2 ? 0.0
                         : (1 - std::pow(2.0 / static_cast<double>(item_count), 1 - theta_)) /
                               (1 - zeta2theta_ / zetan_);
}

int64_t ZipfianGenerator::Next(Random64& rng, int64_t item_count) {
  if (item_count != count_for_zeta_) {
    // YCSB recomputes eta with the original item count here; this uses the current one.
    SetZetan(item_count, item_count > count_for_zeta_
                             ? ZetaIncrement(count_for_zeta_, item_count, theta_, zetan_)
                             : Zeta(item_count, theta_));
  }
  const double u = rng.NextDouble();
  const double uz = u * zetan_;
  if (uz < 1.0) return base_;
  if (uz < 1.0 + half_pow_theta_) return base_ + 1;
  const int64_t ret = base_ + static_cast<int64_t>(static_cast<double>(item_count) *
                                                   std::pow(eta_ * u - eta_ + 1, alpha_));
  return std::min(ret, base_ + item_count - 1);
}

double ScrambledZipfianGenerator::Zetan(double theta) {
  return theta == ZipfianGenerator::kDefaultTheta ? kZetan : ZetaFast(kItemCount + 1, theta);
}

ScrambledZipfianGenerator::ScrambledZipfianGenerator(int64_t min, int64_t max, double theta,
                                                     double zetan)
    : min_(min), item_count_(max - min + 1), gen_(0, kItemCount, theta, zetan) {}

HotspotGenerator::HotspotGenerator(int64_t lb, int64_t ub, double hot_set, double hot_ops)
    : lb_(lb), hot_ops_(hot_ops) {
  const int64_t interval = ub - lb + 1;
  hot_interval_ = std::clamp<int64_t>(static_cast<int64_t>(interval * hot_set), 0, interval);
  cold_interval_ = interval - hot_interval_;
  // A side with no items gets no draws.
  if (hot_interval_ == 0) hot_ops_ = 0;
  if (cold_interval_ == 0) hot_ops_ = 1;
}

int64_t HotspotGenerator::Next(Random64& rng) const {
  if (rng.NextDouble() < hot_ops_) {
    return lb_ + static_cast<int64_t>(rng.Below(static_cast<uint64_t>(hot_interval_)));
  }
  return lb_ + hot_interval_ +
         static_cast<int64_t>(rng.Below(static_cast<uint64_t>(cold_interval_)));
}

AcknowledgedCounterGenerator::AcknowledgedCounterGenerator(int64_t start)
    : next_(start), limit_(start - 1), slots_(new std::atomic<bool>[kWindow]) {
  for (int64_t i = 0; i < kWindow; ++i) slots_[i].store(false, std::memory_order_relaxed);
}

absl::Status AcknowledgedCounterGenerator::Acknowledge(int64_t value) {
  std::atomic<bool>& slot = slots_[value & (kWindow - 1)];
  if (value - limit_.load(std::memory_order_acquire) > kWindow ||
      slot.exchange(true, std::memory_order_seq_cst)) {
    return absl::ResourceExhaustedError(absl::StrCat("insert ", value, " acknowledged while ",
                                                     kWindow,
                                                     " or more earlier inserts are outstanding"));
  }
  // Advance while the slot after limit_ is set and nobody else is advancing; see the
  // invariants in the header.
  for (;;) {
    if (advancing_.exchange(true, std::memory_order_seq_cst)) return absl::OkStatus();
    int64_t limit = limit_.load(std::memory_order_relaxed);
    for (;;) {
      std::atomic<bool>& next = slots_[(limit + 1) & (kWindow - 1)];
      if (!next.load(std::memory_order_seq_cst)) break;
      next.store(false, std::memory_order_relaxed);
      ++limit;
    }
    limit_.store(limit, std::memory_order_release);
    advancing_.store(false, std::memory_order_seq_cst);
    if (!slots_[(limit + 1) & (kWindow - 1)].load(std::memory_order_seq_cst)) {
      return absl::OkStatus();
    }
  }
}

}  // namespace farm::ycsb
