#include "tools/alloc_bench/overhead.h"

#include <malloc.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "alloc/size_classes.h"
#include "alloc/slab_block.h"
#include "farm/base/object_layout.h"
#include "tools/alloc_bench/table.h"

namespace farm::alloc_bench {
namespace {

std::string Bytes(double b) { return absl::StrFormat("%.1f B", b); }

std::string Overhead(double bytes, double payload) {
  return absl::StrFormat("+%.0f %%", 100 * (bytes - payload) / payload);
}

// What one FaRM object of a payload costs, in bytes.
struct FarmCost {
  double stored = 0, slot = 0;
  double header_versions = 0;  // stored - payload
  double internal = 0;         // slot - stored
  double tail = 0;             // block tail / slots
  double region = 0;           // slot + tail
  double node_private = 0;     // SlabBlock bitmaps, descriptor, unit pointers / slots
};

constexpr double FarmCost::*kFarmCostFields[] = {
    &FarmCost::stored, &FarmCost::slot,   &FarmCost::header_versions, &FarmCost::internal,
    &FarmCost::tail,   &FarmCost::region, &FarmCost::node_private};

FarmCost FarmCostOf(uint64_t payload) {
  const alloc::SizeClassInfo& info = alloc::ClassInfo(*alloc::ClassForPayload(payload));
  const double slots = info.slots;
  const uint64_t block = info.block_units * alloc::kBlockUnitBytes;
  const uint64_t bitmap_words = (info.slots + 63) / 64;
  const uint64_t summary_words = (bitmap_words + 63) / 64;  // one bit per bitmap word
  FarmCost c;
  c.stored = static_cast<double>(MaxStoredBytes(payload));
  c.slot = info.slot_bytes;
  c.header_versions = c.stored - static_cast<double>(payload);
  c.internal = c.slot - c.stored;
  c.tail = static_cast<double>(block - uint64_t{info.slots} * info.slot_bytes) / slots;
  c.region = c.slot + c.tail;
  c.node_private = static_cast<double>((2 * bitmap_words + summary_words) * sizeof(uint64_t) +
                                       sizeof(alloc::SlabBlock) +
                                       info.block_units * sizeof(void*)) /
                   slots;
  return c;
}

// Bytes one object of `payload` costs in glibc's heap: usable size plus the 8-byte chunk
// header (the size word; the previous chunk's size word overlaps this chunk's payload).
double GlibcBytes(uint64_t payload) {
  void* p = std::malloc(payload);
  const double bytes = static_cast<double>(::malloc_usable_size(p)) + 8;
  std::free(p);
  return bytes;
}

double MimallocBytes(const MimallocLibrary& mi, uint64_t payload) {
  void* p = mi.malloc(payload);
  const double bytes = static_cast<double>(mi.usable_size(p));
  mi.free(p);
  return bytes;
}

// The mean of f(payload) over payloads [low, high], each equally likely.
template <typename F>
double MeanBytes(uint64_t low, uint64_t high, F f) {
  double sum = 0;
  for (uint64_t p = low; p <= high; ++p) sum += f(p);
  return sum / static_cast<double>(high - low + 1);
}

// FarmCostOf, field by field, averaged over payloads [low, high] (each field summed in
// payload order, as MeanBytes does).
FarmCost MeanFarmCost(uint64_t low, uint64_t high) {
  FarmCost m;
  for (uint64_t p = low; p <= high; ++p) {
    const FarmCost c = FarmCostOf(p);
    for (double FarmCost::*field : kFarmCostFields) m.*field += c.*field;
  }
  for (double FarmCost::*field : kFarmCostFields) m.*field /= static_cast<double>(high - low + 1);
  return m;
}

struct PayloadRow {
  std::string name;
  uint64_t low, high;  // a single payload, or a uniform range (figures are means)
  double mean() const { return static_cast<double>(low + high) / 2; }
};

void PrintFarmCost(const std::vector<PayloadRow>& rows) {
  std::printf("3. Memory per object. FaRM, region bytes per object = slot + block tail / slots "
              "per block; of which header + line versions = MaxStoredBytes(p) - p, internal "
              "fragmentation = slot - MaxStoredBytes(p). Node-private = the SlabBlock of the "
              "object's block amortised over its slots: two bitmaps (local_free, remote_free: 2 "
              "bits per slot, in whole 64-bit words) and the summary of local_free's words + "
              "sizeof(SlabBlock) = %zu B + the per-MiB-unit "
              "block pointer (8 B per unit). Not counted: heap headers of those allocations, the "
              "region's owned_ map entry (~16 B per block), per-thread class state.\n\n",
              sizeof(alloc::SlabBlock));
  Table farm({"payload", "stored", "slot", "header+versions", "internal frag", "block tail/obj",
              "region B/obj", "overhead", "node-private B/obj"},
             1);
  for (const PayloadRow& r : rows) {
    const FarmCost c = MeanFarmCost(r.low, r.high);
    farm.AddRow({r.name, Bytes(c.stored), Bytes(c.slot), Bytes(c.header_versions), Bytes(c.internal),
                 Bytes(c.tail), Bytes(c.region), Overhead(c.region, r.mean()),
                 absl::StrFormat("%.3f B", c.node_private)});
  }
  farm.Print();
}

void PrintComparison(const std::vector<PayloadRow>& rows, const MimallocLibrary& mi) {
  std::printf("   Against glibc (malloc_usable_size(p) + 8 B chunk header) and mimalloc "
              "(mi_usable_size(p); its page metadata is not per object) for the same payloads. "
              "FaRM's 16 B header carries the object's version and incarnation: a malloc-based "
              "store that needed them would add 16 B to its payload.\n\n");
  std::vector<std::string> header = {"payload", "FaRM B/obj", "glibc B/obj"};
  if (mi.loaded()) header.push_back("mimalloc B/obj");
  header.insert(header.end(), {"FaRM overhead", "glibc overhead"});
  if (mi.loaded()) header.push_back("mimalloc overhead");
  Table cmp(header, 1);
  for (const PayloadRow& r : rows) {
    const double payload = r.mean();
    const double farm_bytes = MeanFarmCost(r.low, r.high).region;
    const double glibc_bytes = MeanBytes(r.low, r.high, GlibcBytes);
    const double mi_bytes =
        mi.loaded() ? MeanBytes(r.low, r.high, [&](uint64_t p) { return MimallocBytes(mi, p); }) : 0;
    std::vector<std::string> row = {r.name, Bytes(farm_bytes), Bytes(glibc_bytes)};
    if (mi.loaded()) row.push_back(Bytes(mi_bytes));
    row.insert(row.end(), {Overhead(farm_bytes, payload), Overhead(glibc_bytes, payload)});
    if (mi.loaded()) row.push_back(Overhead(mi_bytes, payload));
    cmp.AddRow(std::move(row));
  }
  cmp.Print();
  if (!mi.loaded()) std::printf("   mimalloc column SKIPPED: %s.\n\n", mi.missing.c_str());
}

}  // namespace

void RunOverhead(const MimallocLibrary& mi) {
  const std::vector<PayloadRow> rows = {{"16 B", 16, 16}, {"64 B", 64, 64}, {"256 B", 256, 256},
                                        {"1024 B", 1024, 1024}, {"mixed 16-1024 (mean)", 16, 1024}};
  PrintFarmCost(rows);
  PrintComparison(rows, mi);
}

}  // namespace farm::alloc_bench
