#include "tools/linkbench/distributions.h"

#include <algorithm>
#include <cmath>

namespace farm::linkbench {

double GeneralizedHarmonic(int64_t n, double m) {
  double value = 0;
  for (int64_t k = n; k > 0; --k) value += 1.0 / std::pow(static_cast<double>(k), m);
  return value;
}

double ApproxGeneralizedHarmonic(int64_t n, double m) {
  if (n < 100000) return GeneralizedHarmonic(n, m);
  if (m == 1) return std::log(static_cast<double>(n)) + 0.5772156649015329;  // + 1/(2n) in int: 0
  const double integral = (1 / (1 - m)) * std::pow(static_cast<double>(n), 1 - m);
  const double correction = 0.58 - 1 / (1 - m);
  return integral + correction;
}

ZipfDistribution::ZipfDistribution(int64_t min, int64_t max, double shape)
    : min_(min), max_(max), shape_(shape) {
  const int64_t n = max - min;
  alpha_ = 1 / (1 - shape);
  zetan_ = shape <= 1.0 ? ApproxGeneralizedHarmonic(n, shape) : GeneralizedHarmonic(n, shape);
  eta_ = (1 - std::pow(2.0 / static_cast<double>(n), 1 - shape)) /
         (1 - GeneralizedHarmonic(2, shape) / zetan_);
  point5theta_ = std::pow(0.5, shape);
}

int64_t ZipfDistribution::Quantile(double p) const {
  const double uz = p * zetan_;
  const int64_t n = max_ - min_;
  if (uz < 1) return min_;
  if (uz < 1 + point5theta_) return min_ + 1;
  const auto offset = static_cast<int64_t>(static_cast<double>(n) * std::pow(eta_ * p - eta_ + 1, alpha_));
  if (offset >= n) return max_ - 1;
  return min_ + offset;
}

double ZipfDistribution::Pdf(int64_t id) const {
  if (id < min_ || id >= max_) return 0.0;
  return (1.0 / std::pow(static_cast<double>(id + 1 - min_), shape_)) / zetan_;
}

int64_t UniformDistribution::Choose(JavaRandom& rng) const {
  const int64_t n = max_ - min_;
  auto i = static_cast<int64_t>(std::floor(rng.NextDouble() * static_cast<double>(n)));
  if (i == n) return max_ - 1;
  return min_ + i;
}

int64_t GeometricDistribution::Choose(JavaRandom& rng) const {
  const double r = rng.NextDouble();
  if (r == 0.0) return min_;
  const int64_t x = min_ + static_cast<int64_t>(std::ceil(std::log(1 - r) / std::log(1 - p_)));
  return std::min(x, max_ - 1);
}

LogNormalDistribution::LogNormalDistribution(int64_t min, int64_t max, double median, double sigma)
    : min_(min), max_(max), mu_(std::log(median)), sigma_(sigma) {}

int64_t LogNormalDistribution::Choose(JavaRandom& rng) const {
  // Java's Math.round: floor(x + 0.5).
  const auto choice = static_cast<int64_t>(std::floor(std::exp(rng.NextGaussian() * sigma_ + mu_) + 0.5));
  if (choice < min_) return min_;
  if (choice >= max_) return max_ - 1;
  return choice;
}

}  // namespace farm::linkbench
