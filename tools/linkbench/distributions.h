// The probability distributions LinkBench's workload names, as its classes compute
// them (com.facebook.LinkBench.distributions): Zipf (Gray et al.'s quick generator,
// with LinkBench's approximate harmonic numbers), uniform, geometric (truncated to
// [min, max)) and log-normal (rounded, clamped to [min, max)). Each draws from a
// JavaRandom so a seeded stream reproduces the real driver's choices.
//
// Immutable after construction (Choose is const); share between threads, each with its
// own JavaRandom.
#ifndef FARM_TOOLS_LINKBENCH_DISTRIBUTIONS_H_
#define FARM_TOOLS_LINKBENCH_DISTRIBUTIONS_H_

#include <cstdint>
#include <memory>

#include "tools/linkbench/java_random.h"

namespace farm::linkbench {

class ProbabilityDistribution {
 public:
  virtual ~ProbabilityDistribution() = default;
  // A value in [min, max).
  virtual int64_t Choose(JavaRandom& rng) const = 0;
};

// Generalized harmonic number H(n, m) = sum_{k=1..n} 1/k^m, exactly.
double GeneralizedHarmonic(int64_t n, double m);
// LinkBench's ApproxHarmonic: exact below n = 100,000, else an integral with an
// empirical correction (m in [0, 1]).
double ApproxGeneralizedHarmonic(int64_t n, double m);

// Zipf over [min, max) with `shape` > 0: min is the most likely value.
class ZipfDistribution final : public ProbabilityDistribution {
 public:
  ZipfDistribution(int64_t min, int64_t max, double shape);
  int64_t Choose(JavaRandom& rng) const override { return Quantile(rng.NextDouble()); }
  int64_t Quantile(double p) const;
  // Probability of `id` (for tests).
  double Pdf(int64_t id) const;

 private:
  int64_t min_, max_;
  double shape_, alpha_, zetan_, eta_, point5theta_;
};

class UniformDistribution final : public ProbabilityDistribution {
 public:
  UniformDistribution(int64_t min, int64_t max) : min_(min), max_(max) {}
  int64_t Choose(JavaRandom& rng) const override;

 private:
  int64_t min_, max_;
};

// Geometric with success probability p, shifted to min and truncated below max:
// min + ceil(ln(1 - r) / ln(1 - p)), so (quirk, as in LinkBench) values start at
// min + 1 except for r == 0.
class GeometricDistribution final : public ProbabilityDistribution {
 public:
  GeometricDistribution(int64_t min, int64_t max, double p) : min_(min), max_(max), p_(p) {}
  int64_t Choose(JavaRandom& rng) const override;

 private:
  int64_t min_, max_;
  double p_;
};

// exp(N(ln median, sigma)) rounded, clamped to [min, max - 1].
class LogNormalDistribution final : public ProbabilityDistribution {
 public:
  LogNormalDistribution(int64_t min, int64_t max, double median, double sigma);
  int64_t Choose(JavaRandom& rng) const override;

 private:
  int64_t min_, max_;
  double mu_, sigma_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_DISTRIBUTIONS_H_
