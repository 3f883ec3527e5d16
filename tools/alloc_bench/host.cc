#include "tools/alloc_bench/host.h"

#include <gnu/libc-version.h>
#include <sched.h>
#include <sys/utsname.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"

namespace farm::alloc_bench {
namespace {

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  return in >> one ? absl::StrFormat("%.2f", one) : "unknown";
}

}  // namespace

void PrintHost() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int nproc = ::sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
  utsname u;
  ::uname(&u);
  std::printf("alloc_bench: %d cores (nproc), %s, Linux %s, glibc %s, load average %s at the "
              "start. Every figure below was measured or computed in this run.\n\n",
              nproc, CpuModel().c_str(), u.release, ::gnu_get_libc_version(),
              LoadAverage().c_str());
}

}  // namespace farm::alloc_bench
