// CpuRelax: the spin-wait hint (x86 PAUSE, Arm YIELD), for polling loops.
#ifndef FARM_BASE_CPU_RELAX_H_
#define FARM_BASE_CPU_RELAX_H_

namespace farm {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace farm

#endif  // FARM_BASE_CPU_RELAX_H_
