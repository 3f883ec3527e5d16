// A fault-injecting wrapper for whole processes: preloaded (LD_PRELOAD), it makes every
// fsync and fdatasync of the process — and of the processes it starts, which inherit
// the environment — take FARM_SLOW_SYNC_US microseconds longer (default 20000), as on
// a loaded or slow disk. For tests and measurements of what a node does when its log's
// syncs are slow (tests/failover/CMakeLists.txt); never in production.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>

namespace {

useconds_t ExtraMicros() {
  static const useconds_t extra = [] {
    const char* v = std::getenv("FARM_SLOW_SYNC_US");
    return v != nullptr ? static_cast<useconds_t>(std::strtoul(v, nullptr, 10)) : useconds_t{20000};
  }();
  return extra;
}

template <typename Fn>
Fn Next(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" int fsync(int fd) {
  static const auto real = Next<int (*)(int)>("fsync");
  usleep(ExtraMicros());
  return real(fd);
}

extern "C" int fdatasync(int fd) {
  static const auto real = Next<int (*)(int)>("fdatasync");
  usleep(ExtraMicros());
  return real(fd);
}
