// JavaRandom: java.util.Random's generator (a 48-bit LCG), bit for bit, so that the
// fixed-seed parts of LinkBench (the invertible shufflers behind the graph's shape and
// the id1 access distributions) come out exactly as in the real driver, and the
// per-thread request streams are seeded the same way.
//
// Not thread-safe: one per thread (loader chunk, requester). Copyable.
#ifndef FARM_TOOLS_LINKBENCH_JAVA_RANDOM_H_
#define FARM_TOOLS_LINKBENCH_JAVA_RANDOM_H_

#include <cmath>
#include <cstdint>

namespace farm::linkbench {

class JavaRandom {
 public:
  explicit JavaRandom(int64_t seed) { SetSeed(seed); }

  void SetSeed(int64_t seed) {
    seed_ = (static_cast<uint64_t>(seed) ^ kMultiplier) & kMask;
    have_next_gaussian_ = false;
  }

  // A uniform int in [0, bound); bound > 0 (Random.nextInt(int)).
  int32_t NextInt(int32_t bound) {
    if ((bound & -bound) == bound) {  // a power of two
      return static_cast<int32_t>((static_cast<int64_t>(bound) * Next(31)) >> 31);
    }
    int32_t bits, val;
    do {
      bits = Next(31);
      val = bits % bound;
      // Java's overflow test: bits - val + (bound - 1) < 0 in 32-bit arithmetic.
    } while (static_cast<int32_t>(static_cast<uint32_t>(bits) - static_cast<uint32_t>(val) +
                                  static_cast<uint32_t>(bound - 1)) < 0);
    return val;
  }
  int32_t NextInt() { return Next(32); }
  int64_t NextLong() {
    const int64_t hi = Next(32);
    const int64_t lo = Next(32);
    return static_cast<int64_t>(static_cast<uint64_t>(hi) << 32) + lo;
  }
  // Uniform in [0, 1) with 53 random bits (Random.nextDouble).
  double NextDouble() {
    const int64_t hi = Next(26);
    const int64_t lo = Next(27);
    return static_cast<double>((hi << 27) + lo) * 0x1.0p-53;
  }
  // Standard normal by the polar method, in pairs (Random.nextGaussian).
  double NextGaussian() {
    if (have_next_gaussian_) {
      have_next_gaussian_ = false;
      return next_gaussian_;
    }
    double v1, v2, s;
    do {
      v1 = 2 * NextDouble() - 1;
      v2 = 2 * NextDouble() - 1;
      s = v1 * v1 + v2 * v2;
    } while (s >= 1 || s == 0);
    const double multiplier = std::sqrt(-2 * std::log(s) / s);
    next_gaussian_ = v2 * multiplier;
    have_next_gaussian_ = true;
    return v1 * multiplier;
  }

 private:
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL;
  static constexpr uint64_t kMask = (uint64_t{1} << 48) - 1;

  int32_t Next(int bits) {
    seed_ = (seed_ * kMultiplier + 0xBULL) & kMask;
    return static_cast<int32_t>(static_cast<int64_t>(seed_) >> (48 - bits));
  }

  uint64_t seed_ = 0;
  double next_gaussian_ = 0;
  bool have_next_gaussian_ = false;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_JAVA_RANDOM_H_
