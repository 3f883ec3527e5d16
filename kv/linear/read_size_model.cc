#include "kv/linear/read_size_model.h"

#include <algorithm>
#include <cmath>

namespace farm::kv::linear {
namespace {

// Load factors are sampled on this grid; the distribution is computed this far at most
// (beyond, R is capped by the probe bound anyway).
constexpr uint64_t kMaxDistribution = 1 << 13;
constexpr double kNegligible = 1e-12;

}  // namespace

std::vector<double> FirstEmptyDistribution(uint64_t slots, uint64_t non_empty, uint64_t k) {
  const double m = static_cast<double>(slots);
  // Knuth's formula needs an empty slot beyond the N keys (M - N - 1 > 0).
  const uint64_t n_int = std::min<uint64_t>(non_empty, slots >= 2 ? slots - 2 : 0);
  const double n = static_cast<double>(n_int);
  std::vector<double> p;
  p.reserve(static_cast<size_t>(std::min<uint64_t>(k, 1024)));
  double pk = 1 - n / m;
  double log_choose = 0;  // ln C(N, i)
  double remaining = 1;   // 1 - C_k
  const double log_m = std::log(m);
  const double log_spare = std::log(m - n - 1);
  for (uint64_t i = 0; i < k && i < slots; ++i) {
    p.push_back(std::max(pk, 0.0));
    remaining -= pk;
    if (remaining < kNegligible) break;
    // P_{i+1} = P_i - M^-N g(M, N, i).
    if (i > 0) log_choose += std::log(n - double(i) + 1) - std::log(double(i));
    double term = 0;
    if (i <= n_int && double(i) + 1 < m) {
      const double di = static_cast<double>(i);
      term = std::exp(log_choose + (di - 1) * std::log(di + 1) + log_spare - std::log(m - di - 1) - di * log_m +
                      (n - di) * std::log1p(-(di + 1) / m));
    }
    pk -= term;
  }
  return p;
}

std::vector<double> Cumulative(const std::vector<double>& p) {
  std::vector<double> c(p.size() + 1, 0.0);
  for (size_t i = 0; i < p.size(); ++i) c[i + 1] = c[i] + p[i];
  return c;
}

double ExpectedReads(const std::vector<double>& c, uint32_t r) {
  // sum_{j>=0} (1 - C_{jR}), up to where the distribution was truncated; the mass
  // beyond counts as one READ more (it is negligible, or lies past the probe bound).
  double expected = 0;
  size_t k = 0;
  for (; k < c.size(); k += r) expected += std::max(0.0, 1 - c[k]);
  return expected + std::max(0.0, 1 - c.back());
}

uint32_t BandwidthCap(double slot_bytes, const ReadCost& cost) {
  const double rho_hat = cost.rho0_per_s * cost.header_bytes / (cost.header_bytes + slot_bytes);
  const double cap = cost.link_bytes_per_s / (slot_bytes * rho_hat);
  return static_cast<uint32_t>(std::max(1.0, std::floor(cap)));
}

uint32_t OptimalReadSize(const std::vector<double>& p, double slot_bytes, uint32_t max_r,
                         const ReadSizeOptions& options) {
  const std::vector<double> c = Cumulative(p);
  uint32_t limit = std::max<uint32_t>(1, max_r);
  if (options.bandwidth_limit) limit = std::min(limit, BandwidthCap(slot_bytes, options.cost));
  uint32_t best = 1;
  double best_cost = 0;
  for (uint32_t r = 1; r <= limit; ++r) {
    const double t = options.cost.c_ns + options.cost.alpha_ns_per_byte * r * slot_bytes;
    const double cost = ExpectedReads(c, r) * t;
    if (r == 1 || cost < best_cost) {
      best = r;
      best_cost = cost;
    }
  }
  return best;
}

ReadSizeTable ReadSizeTable::Build(uint64_t slots, double slot_bytes, uint32_t max_r, const ReadSizeOptions& options) {
  ReadSizeTable table;
  if (options.fixed > 0) {
    table.fixed_ = true;
    table.r_.fill(std::min(options.fixed, std::max<uint32_t>(1, max_r)));
    return table;
  }
  for (int step = 0; step < kSteps; ++step) {
    const uint64_t non_empty = static_cast<uint64_t>(std::llround(double(step) / kSteps * double(slots)));
    const std::vector<double> p = FirstEmptyDistribution(slots, non_empty, std::min<uint64_t>(slots, kMaxDistribution));
    table.r_[step] = OptimalReadSize(p, slot_bytes, max_r, options);
  }
  return table;
}

uint32_t ReadSizeTable::For(double load) const {
  const int step = std::clamp(static_cast<int>(load * kSteps + 0.5), 0, kSteps - 1);
  return r_[step];
}

void LoadEstimate::Record(uint32_t non_empty, uint32_t slots) {
  std::pair<uint32_t, uint32_t>& slot = window_[samples_ % kWindow];
  total_non_empty_ = total_non_empty_ - slot.first + non_empty;
  total_slots_ = total_slots_ - slot.second + slots;
  slot = {non_empty, slots};
  ++samples_;
}

}  // namespace farm::kv::linear
