// CuckooMap: where the cuckoo table's memory is, as every machine opened it (immutable
// once built, shared by a node's threads): every data-holding node's index objects (its
// part of the N-way cuckoo index of 64-bit ITEs) and its data tables (one run of
// one-sided objects per size class, each worker thread of that node owning an equal
// slice of entries), and the N candidate index slots of a key.
//
// The index is one array of `index_slots()` entries over the nodes, in the order of
// `nodes()` (ascending NodeId): a key's candidates are N distinct slots chosen from its
// hash, anywhere in it (so on up to N machines). Entries of a data table are numbered
// from 0 across its objects; slice s owns [s * per_thread, (s+1) * per_thread): slice t
// is the node's worker thread t, the guest slices after them are claimed (one-sided
// FETCH_ADD on the node's claims word) by the threads of compute-only members, which
// hold no data table of their own. A claimed slice is never given back (a restarted
// compute-only member claims another).
//
// A node's directory (NodeTables, encoded into its catalog object by CuckooHost) lists
// its RawPtrs; EncodeNodeTables/DecodeNodeTables are its bytes.
#ifndef FARM_KV_CUCKOO_CUCKOO_MAP_H_
#define FARM_KV_CUCKOO_CUCKOO_MAP_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/one_sided.h"
#include "kv/cuckoo/entry_format.h"

namespace farm::kv::cuckoo {

inline constexpr uint32_t kMaxWays = 3;
// Index objects hold up to this many ITEs (512 KiB).
inline constexpr uint32_t kIteObjectEntries = 1 << 16;

struct ClassTable {
  uint32_t per_thread = 0;  // entries each slice (a thread's) owns
  uint32_t entries_per_object = 0;
  std::vector<RawPtr> objects;  // slices * per_thread entries in all
};

struct NodeTables {
  NodeId owner = 0;
  uint32_t threads = 0;       // slices 0 .. threads-1: the node's worker threads
  uint32_t guest_slices = 0;  // slices threads .. threads+guests-1: compute-only clients
  RawPtr claims;              // word 0: guest slices claimed so far (rawFetchAdd64)
  uint32_t slices() const { return threads + guest_slices; }
  uint64_t pairs = 0;  // the capacity this node's share is sized for
  uint64_t index_slots = 0;
  std::vector<RawPtr> index;  // kIteObjectEntries ITEs each (the last may hold fewer)
  std::array<ClassTable, kSizeClasses> data;
};

std::string EncodeNodeTables(const NodeTables& t);
// InvalidArgument for bytes that are not a directory (e.g. not written yet: all zero).
absl::StatusOr<NodeTables> DecodeNodeTables(absl::string_view bytes);

// Where an 8-byte word or an entry lies.
struct RawLocation {
  RawPtr object;
  uint32_t offset = 0;
};

class CuckooMap {
 public:
  // InvalidArgument for no nodes, more than kMaxDataTables, ways outside [2, 3] or a node
  // with no index slots.
  static absl::StatusOr<CuckooMap> Create(std::vector<NodeTables> nodes, uint32_t ways);

  uint32_t ways() const { return ways_; }
  uint64_t index_slots() const { return index_slots_; }
  const std::vector<NodeTables>& nodes() const { return nodes_; }
  // The table index of `node`, or -1 for a node that holds no table.
  int TableOf(NodeId node) const;

  // The key's candidate slots (ways() distinct slots), in probe order.
  std::array<uint64_t, kMaxWays> Candidates(uint64_t key_hash) const;
  RawLocation IndexWord(uint64_t slot) const;
  RawLocation Entry(const EntryRef& ref) const;

 private:
  CuckooMap(std::vector<NodeTables> nodes, uint32_t ways);
  std::vector<NodeTables> nodes_;
  std::vector<uint64_t> first_slot_;  // per node: its first index slot
  uint32_t ways_ = 0;
  uint64_t index_slots_ = 0;
};

}  // namespace farm::kv::cuckoo

#endif  // FARM_KV_CUCKOO_CUCKOO_MAP_H_
