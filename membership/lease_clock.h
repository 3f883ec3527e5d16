// The clock leases are timed on: CLOCK_MONOTONIC, in nanoseconds (the base of
// std::chrono::steady_clock on Linux). Read exactly, at every check: the coarse clock is
// cheaper, but on a tickless kernel it can lag the true time by more than its stated
// resolution (seen here: 28 ns past "coarse + resolution" in 75k readings), and a lease
// checked against an early reading outlives its deadline.
#ifndef FARM_MEMBERSHIP_LEASE_CLOCK_H_
#define FARM_MEMBERSHIP_LEASE_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace farm::membership {

inline int64_t LeaseClockNowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_LEASE_CLOCK_H_
