// The cuckoo layout's two entry formats (Nessie, kv/cuckoo/README in kv/README.md):
// index table entries (ITEs, 64-bit words of the N-way cuckoo index) and data table
// entries (DTEs, fixed-size self-verifying records in per-node data tables, each owned by
// one worker thread of that node).
//
// Invariants (the protocol in kv/cuckoo/cuckoo_ops.h relies on every one):
//   1. An ITE is 0 (empty) or names one incarnation of one DTE: (data table = the
//      holding node's index in CuckooMap::nodes, size class, entry, version) plus 8
//      filter bits of the key's hash. Versions start at 1, so a non-empty ITE is never 0.
//   2. An ITE changes only by rawCas64. A DTE incarnation is installed in at most one
//      ITE, once: every PUT, DELETE's predecessor and MIGRATE writes a fresh DTE
//      incarnation. So an ITE that reads the same non-zero value twice held it all along
//      (no ABA short of the 24-bit version wrapping on one entry).
//   3. A DTE's state word (word 0) is (version << 8) | flags. Its owner writes a whole
//      new incarnation (version + 1, flags 0: invalid) only while no ITE names the entry;
//      after that only rawCas64 changes the state word: invalid -> valid (the writer,
//      once its ITE CAS and checks succeeded) and invalid/valid -> recycled (the one
//      client whose CAS removed the last ITE naming it). A recycled entry is never made
//      valid again, so a late "make valid" of an entry already replaced is harmless.
//   4. A reader accepts a DTE only if its state word is (the ITE's version, valid), its
//      checksum (over version, lengths, key, value) matches and the copy was not torn;
//      anything else means the ITE changed since it was read: read the index again.
#ifndef FARM_KV_CUCKOO_ENTRY_FORMAT_H_
#define FARM_KV_CUCKOO_ENTRY_FORMAT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace farm::kv::cuckoo {

// --- Index table entries ---

inline constexpr uint32_t kMaxDataTables = 255;  // 8 bits
inline constexpr uint32_t kMaxEntryIndex = (1u << 22) - 1;
inline constexpr uint32_t kVersionMask = (1u << 24) - 1;

struct EntryRef {
  uint32_t table = 0;       // the holding node's index in CuckooMap::nodes()
  uint32_t size_class = 0;  // 0 .. kSizeClasses - 1
  uint32_t entry = 0;       // in the node's table of that class
  uint32_t version = 0;     // 1 .. kVersionMask
  friend bool operator==(const EntryRef&, const EntryRef&) = default;
};

// Bits 63..56 table, 55..54 class, 53..32 entry, 31..8 version, 7..0 filter.
uint64_t EncodeIte(const EntryRef& ref, uint8_t filter);
EntryRef DecodeIte(uint64_t ite);
inline uint8_t IteFilter(uint64_t ite) { return static_cast<uint8_t>(ite); }
inline uint8_t KeyFilter(uint64_t key_hash) { return static_cast<uint8_t>(key_hash >> 56); }

// --- Data table entries ---

// Entry sizes of the classes (header + key + value fit the smallest that holds them).
// The largest holds a pair at the kv limits (kv/key_ops.h): 24 + 8 KiB + 48 KiB.
inline constexpr uint32_t kSizeClasses = 4;
inline constexpr std::array<uint32_t, kSizeClasses> kClassBytes = {128, 1024, 8192, 65536};
inline constexpr uint32_t kEntryHeaderBytes = 24;
// A lookup's first READ of an entry: its header and key, and the value when it fits.
inline constexpr uint32_t kFirstReadBytes = 1024;

inline constexpr uint64_t kValid = 1;
inline constexpr uint64_t kRecycled = 2;
inline uint64_t StateWord(uint32_t version, uint64_t flags) {
  return (uint64_t{version} << 8) | flags;
}
inline uint32_t StateVersion(uint64_t state) {
  return static_cast<uint32_t>(state >> 8) & kVersionMask;
}
inline uint64_t StateFlags(uint64_t state) { return state & 0xff; }

// The class for a pair, or nullopt when it exceeds the largest (never within the kv
// limits).
std::optional<uint32_t> ClassFor(size_t key_bytes, size_t value_bytes);

// Writes an invalid incarnation `version` of the pair into `out` (at least header + key +
// value bytes); returns the bytes used.
size_t EncodeEntry(uint32_t version, absl::string_view key, absl::string_view value,
                   std::span<char> out);

// A DTE as read: views into the bytes read.
struct EntryView {
  uint64_t state = 0;
  uint32_t key_bytes = 0;
  uint32_t value_bytes = 0;
  bool key_read = false;    // all of the key is within the bytes read
  absl::string_view key;    // valid when key_read
  absl::string_view value;  // empty unless all of it was read
  bool complete = false;    // header, key and value all within the bytes read
};
// Parses the header of `bytes` (from the entry's start) and as much of the pair as it
// holds. InvalidArgument for fewer than a header's bytes or lengths over the class.
absl::Status ParseEntry(std::span<const char> bytes, uint32_t class_bytes, EntryView& view);
// True when a complete view's checksum matches its version, lengths, key and value.
bool ChecksumMatches(std::span<const char> bytes, const EntryView& view);

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_ENTRY_FORMAT_H_
