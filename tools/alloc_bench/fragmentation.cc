#include "tools/alloc_bench/fragmentation.h"

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "alloc/size_classes.h"
#include "farm/base/object_layout.h"
#include "tools/alloc_bench/table.h"

namespace farm::alloc_bench {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string Percent(double fraction) { return absl::StrFormat("%.2f %%", 100 * fraction); }
std::string Size(uint64_t b) { return absl::StrCat(b, " B"); }

std::string SizeName(uint64_t bytes) {
  if (bytes >= kMiB && bytes % kMiB == 0) return absl::StrCat(bytes / kMiB, " MiB");
  if (bytes >= 1024 && bytes % 1024 == 0) return absl::StrCat(bytes / 1024, " KiB");
  return absl::StrCat(bytes, " B");
}

// (slot - s) / slot over every stored size s in [low, high] (1-byte granularity),
// computed here from SlotSizes() in closed form per class, not with FragmentationOver.
struct FragSum {
  double sum = 0;
  uint64_t sizes = 0;
  double maximum = 0;
  uint64_t worst_size = 0;
  uint32_t classes = 0;  // slot sizes inside [low, high]
  uint32_t min_step = 0, max_step = 0;  // between consecutive slots inside [low, high]
  double average() const { return sizes == 0 ? 0 : sum / static_cast<double>(sizes); }
};

FragSum SumFragmentation(uint64_t low, uint64_t high) {
  const auto& slots = alloc::SlotSizes();
  FragSum f;
  for (size_t c = 0; c < slots.size(); ++c) {
    const uint64_t slot = slots[c];
    const uint64_t previous = c == 0 ? 0 : slots[c - 1];
    const uint64_t first = std::max(previous + 1, low);
    const uint64_t last = std::min(slot, high);
    if (slot >= low && slot <= high) {
      ++f.classes;
      if (c > 0 && previous >= low) {
        const uint32_t step = static_cast<uint32_t>(slot - previous);
        f.min_step = f.min_step == 0 ? step : std::min(f.min_step, step);
        f.max_step = std::max(f.max_step, step);
      }
    }
    if (first > last) continue;
    const double n = static_cast<double>(last - first + 1);
    const double size_sum = static_cast<double>(first + last) * n / 2;
    f.sum += n - size_sum / static_cast<double>(slot);
    f.sizes += last - first + 1;
    const double worst = static_cast<double>(slot - first) / static_cast<double>(slot);
    if (worst > f.maximum) {
      f.maximum = worst;
      f.worst_size = first;
    }
  }
  return f;
}

// Each power-of-two octave [2^k, 2^(k+1)) for 2^k in [low, high) equally likely, sizes
// uniform inside an octave.
double LogUniformAverage(uint64_t low, uint64_t high) {
  double sum = 0;
  int octaves = 0;
  for (uint64_t o = low; o < high; o *= 2, ++octaves) sum += SumFragmentation(o, 2 * o - 1).average();
  return sum / octaves;
}

// The largest payload whose stored size is at most `stored` (0 if none).
uint64_t PayloadForStored(uint64_t stored) {
  uint64_t p = stored > kObjectHeaderBytes ? stored - kObjectHeaderBytes : 0;
  while (p > 0 && MaxStoredBytes(p) > stored) --p;
  return p;
}

struct EmpiricalResult {
  double mean = 0;            // mean over objects of (slot - stored) / slot
  double bytes_weighted = 0;  // sum(slot - stored) / sum(slot)
  uint64_t mismatches = 0;    // slot read back != the class table's slot for the payload
};

// Allocates `count` objects with stored sizes from `draw` on a FaRM thread allocator,
// reads each one's slot size back from its block, and frees them.
template <typename Draw>
EmpiricalResult MeasureFragmentation(FarmMachine& machine, int count, Draw draw) {
  FarmHeap heap(machine);
  std::vector<FatPtr> objects;
  objects.reserve(count);
  EmpiricalResult r;
  double slot_sum = 0, waste_sum = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t payload = PayloadForStored(draw());
    const FatPtr p = heap.Alloc(static_cast<uint32_t>(payload));
    objects.push_back(p);
    const double slot = machine.SlotBytesOf(p);
    const double stored = static_cast<double>(MaxStoredBytes(payload));
    if (slot != alloc::ClassInfo(*alloc::ClassForPayload(payload)).slot_bytes) ++r.mismatches;
    r.mean += (slot - stored) / slot;
    slot_sum += slot;
    waste_sum += slot - stored;
  }
  for (const FatPtr& p : objects) heap.Free(p);
  r.mean /= count;
  r.bytes_weighted = waste_sum / slot_sum;
  return r;
}

void PrintClassFragmentation() {
  const alloc::Fragmentation all = alloc::FragmentationOver(64, kMiB);
  const alloc::Fragmentation large = alloc::FragmentationOver(448, kMiB);
  const FragSum mine = SumFragmentation(64, kMiB);
  Table t({"stored sizes", "weighting", "average", "maximum", "at size", "paper"}, 2);
  t.AddRow({"64 B .. 1 MiB", "uniform (FragmentationOver)", Percent(all.average), Percent(all.maximum),
            Size(all.worst_size), "1.8 % avg, 3.6 % max"});
  t.AddRow({"448 B .. 1 MiB", "uniform (FragmentationOver)", Percent(large.average),
            Percent(large.maximum), Size(large.worst_size), "3.6 % max"});
  t.AddRow({"64 B .. 1 MiB", "uniform (recomputed from SlotSizes)", Percent(mine.average()),
            Percent(mine.maximum), Size(mine.worst_size), "-"});
  t.AddRow({"64 B .. 1 MiB", "log-uniform (each octave equally likely)",
            Percent(LogUniformAverage(64, kMiB)), Percent(mine.maximum), "-", "-"});
  t.Print();
}

void PrintOctaves() {
  Table t({"stored sizes (octave)", "slots in it", "slot step", "average", "maximum", "at size"}, 1);
  for (uint64_t o = 64; o < kMiB; o *= 2) {
    const FragSum f = SumFragmentation(o, 2 * o - 1);
    const std::string step = f.min_step == f.max_step ? Size(f.min_step)
                                                      : absl::StrFormat("%u-%u B", f.min_step, f.max_step);
    t.AddRow({absl::StrCat("[", SizeName(o), ", ", SizeName(2 * o), ")"), absl::StrCat(f.classes),
              step, Percent(f.average()), Percent(f.maximum), Size(f.worst_size)});
  }
  t.Print();
}

void PrintEmpirical(FarmMachine& machine, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Table t({"stored sizes drawn", "objects", "measured mean (slot-stored)/slot", "computed", "bytes-weighted",
           "slot != table"},
          1);
  {
    std::uniform_int_distribution<uint64_t> size(64, 4096);
    const EmpiricalResult r = MeasureFragmentation(machine, count, [&] { return size(rng); });
    t.AddRow({"uniform 64 B .. 4 KiB", absl::StrCat(count), Percent(r.mean),
              Percent(alloc::FragmentationOver(64, 4096).average), Percent(r.bytes_weighted),
              absl::StrCat(r.mismatches)});
  }
  {
    std::uniform_int_distribution<int> octave(6, 15);  // 64 B .. 64 KiB
    const EmpiricalResult r = MeasureFragmentation(machine, count, [&] {
      const uint64_t low = uint64_t{1} << octave(rng);
      return std::uniform_int_distribution<uint64_t>(low, 2 * low - 1)(rng);
    });
    t.AddRow({"log-uniform 64 B .. 64 KiB", absl::StrCat(count), Percent(r.mean),
              Percent(LogUniformAverage(64, 64 * 1024)), Percent(r.bytes_weighted),
              absl::StrCat(r.mismatches)});
  }
  t.Print();
}

}  // namespace

void RunFragmentation(FarmMachine& machine, int empirical_objects, uint64_t seed) {
  std::printf("2. Internal fragmentation of the %u size classes: (slot - s) / slot for an object of "
              "s stored bytes (16 B header + payload + 2 B per line crossed) in the smallest slot "
              "that holds it. Slots are multiples of %lu B.\n\n",
              alloc::kSizeClassCount, static_cast<unsigned long>(kObjectAlignment));
  PrintClassFragmentation();
  std::printf("   Per octave of stored sizes (the log-uniform average is the mean of these "
              "averages): below ~450 B the 16-byte step, not the 3.5 %% growth ratio, sets the "
              "slot sizes.\n\n");
  PrintOctaves();
  std::printf("   Empirical: objects allocated through ThreadAllocator::Allocate, payload = the "
              "largest with MaxStoredBytes(payload) <= the drawn size, slot read back from the "
              "object's SlabBlock; \"computed\" is the table's figure for the same distribution of "
              "drawn sizes; bytes-weighted = sum(slot - stored) / sum(slot).\n\n");
  PrintEmpirical(machine, empirical_objects, seed);
}

}  // namespace farm::alloc_bench
