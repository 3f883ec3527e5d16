// The read size R of a linear-probing lookup: how many consecutive slots one round trip
// READs, after Wang, Yang, Kimura, Swart and Blanas, "Efficient Usage of One-Sided RDMA
// for Linear Probing" (ADMS'20), section 3.
//
// The model (section 3.1, Eq. 1-3). A lookup READs R slots at a time until it reaches
// the first empty slot. X(R) is the number of READs that takes and T(R) the cost of one:
//   R* = argmin_R  E[X(R)] * T(R)                                   (Eq. 1)
//   subject to     R * w * rho_hat <= l,  rho_hat = rho0 * h / (h + w)   (Eq. 2)
//   T(R) = c + alpha * R * w                                          (Eq. 3)
// with w the bytes of a slot, c a READ's fixed cost, alpha seconds per byte, l the link
// bandwidth, rho0 the peak rate of 0-byte READs and h = 30 B the header of one. If the
// optimum breaks Eq. 2, the largest R that meets it is taken.
//
// E[X(R)] (section 3.3, Eq. 4-6), with C_k the probability that the first empty slot is
// among the first k slots probed (C_0 = 0) and P_k that it is exactly k slots past the
// start:
//   E[X(R)] = sum_i i * (C_{iR} - C_{(i-1)R}) = sum_{j>=0} (1 - C_{jR}),  C_k = sum_{i<k} P_i
// and P_k for M slots of which N are not empty (Knuth; Eq. 7-8):
//   P_0 = 1 - N/M,  P_k = P_{k-1} - M^-N g(M, N, k-1),
//   g(M, N, k) = C(N, k) f(k+1, k) f(M-k-1, N-k),  f(m, n) = (1 - n/m) m^n,
// evaluated as a sum of logarithms (the paper's section 3.3 does the same for numerical
// stability): M^-N g(M, N, k) = exp(ln C(N,k) + (k-1) ln(k+1) + ln((M-N-1)/(M-k-1))
//                                   - k ln M + (N-k) ln(1 - (k+1)/M)).
// Tombstones count as not empty (a probe passes them), so N is the table's non-empty
// slots. The cluster hints of section 3.4 are not used.
//
// Bootstrapping (section 3.5): c and rho0 are measured on the deployment; the defaults
// are the paper's (EDR InfiniBand: c = 1290 ns, rho0 = 87.17 M/s, l = 100 Gb/s,
// alpha = 0.08 ns/B), and w is the bytes a slot occupies in memory (its group's stored
// size / G), which a READ moves. With those, Eq. 2 caps R at 6-7 slots of ~60 B.
//
// ReadSizeTable holds R* for load factors 0.00, 0.01, ..., 0.99 of one table, computed
// once when the table opens; lookups take the entry of their current load estimate
// (LoadEstimate). A fixed R (the paper's "fixed linear") bypasses the model.
#ifndef FARM_KV_LINEAR_READ_SIZE_MODEL_H_
#define FARM_KV_LINEAR_READ_SIZE_MODEL_H_

#include <array>
#include <cstdint>
#include <vector>

namespace farm::kv::linear {

struct ReadCost {
  double c_ns = 1290;                  // fixed cost of one READ
  double alpha_ns_per_byte = 0.08;     // 1 / the link's speed
  double rho0_per_s = 87.17e6;         // peak rate of 0-byte READs
  double link_bytes_per_s = 100e9 / 8;  // l
  double header_bytes = 30;            // h: a 0-byte READ's bytes on the wire
};

struct ReadSizeOptions {
  uint32_t fixed = 0;             // R for every lookup (the paper's fixed linear); 0: the model
  bool bandwidth_limit = true;    // Eq. 2 (false: the paper's "unconstrained" variant)
  ReadCost cost;
};

// P_0 .. P_{k-1} for a table of `slots` slots of which `non_empty` are not empty
// (Knuth's distribution of the distance from a random slot to the first empty one).
// Stops early once the remaining mass is below 1e-12.
std::vector<double> FirstEmptyDistribution(uint64_t slots, uint64_t non_empty, uint64_t k);
// C_0 .. C_K from P_0 .. P_{K-1} (Eq. 6).
std::vector<double> Cumulative(const std::vector<double>& p);
// E[X(R)] from C (Eq. 4-6), R >= 1; the mass beyond C's end (where the distribution was
// truncated as negligible) counts as one READ more.
double ExpectedReads(const std::vector<double>& c, uint32_t r);
// The largest R that Eq. 2 allows for slots of `slot_bytes`.
uint32_t BandwidthCap(double slot_bytes, const ReadCost& cost);
// R* of Eq. 1 in [1, max_r] (under Eq. 2 unless `bandwidth_limit` is false).
uint32_t OptimalReadSize(const std::vector<double>& p, double slot_bytes, uint32_t max_r,
                         const ReadSizeOptions& options);

class ReadSizeTable {
 public:
  static constexpr int kSteps = 100;  // load factors 0.00 .. 0.99

  // For a table of `slots` slots of `slot_bytes` each; R at most `max_r`.
  static ReadSizeTable Build(uint64_t slots, double slot_bytes, uint32_t max_r, const ReadSizeOptions& options);

  // R for a table this full (non-empty slots / slots; clamped to [0, 0.99]).
  uint32_t For(double load) const;
  bool fixed() const { return fixed_; }

 private:
  bool fixed_ = false;
  std::array<uint32_t, kSteps> r_{};
};

// A client's estimate of its table's load factor (non-empty slots / slots), from slot
// groups read at random (each slot of a random group is non-empty with probability the
// load factor, so their mean is an unbiased estimate): the mean over the last kWindow
// samples. Owned by one thread.
class LoadEstimate {
 public:
  static constexpr int kWindow = 256;
  // The estimate before any sample.
  static constexpr double kPrior = 0.5;

  void Record(uint32_t non_empty, uint32_t slots);
  double load() const { return total_slots_ ? double(total_non_empty_) / double(total_slots_) : kPrior; }
  uint64_t samples() const { return samples_; }

 private:
  std::array<std::pair<uint32_t, uint32_t>, kWindow> window_{};
  uint64_t samples_ = 0;
  uint64_t total_non_empty_ = 0;
  uint64_t total_slots_ = 0;
};

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_READ_SIZE_MODEL_H_
