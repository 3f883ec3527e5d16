// Random64: a small, fast, deterministic pseudo-random generator (xoshiro256**, seeded
// through SplitMix64) for the workload generators. The same seed gives the same
// sequence on every machine. One instance per thread; not thread-safe; no allocation.
#ifndef FARM_TOOLS_YCSB_RANDOM_H_
#define FARM_TOOLS_YCSB_RANDOM_H_

#include <cstdint>

namespace farm::ycsb {

// SplitMix64's output function: a bijective 64-bit mix (Steele, Lea, Flood 2014).
inline uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Random64 {
 public:
  explicit Random64(uint64_t seed) {
    uint64_t s = seed;
    for (uint64_t& word : state_) {
      s += 0x9e3779b97f4a7c15ULL;
      word = Mix64(s);
    }
  }

  uint64_t Next() {
    const uint64_t result = Rotl(state_[1] * 5, 7) * 9;
    const uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = Rotl(state_[3], 45);
    return result;
  }

  // Uniform in [0, 1), 53 bits of precision.
  double NextDouble() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

  // Uniform in [0, n) for n >= 1 (Lemire's multiply-shift; the bias, below n / 2^64,
  // is immaterial here).
  uint64_t Below(uint64_t n) {
    return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64);
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

  uint64_t state_[4];
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_RANDOM_H_
