#include "kv/cuckoo/cuckoo_map.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"

namespace farm::kv::cuckoo {
namespace {

constexpr uint64_t kDirectoryMagic = 0x6b766375636b6f6full;  // "kvcuckoo"

void PutPtr(WireWriter& w, const RawPtr& p) {
  w.Put<uint64_t>(p.addr.raw()).Put<uint32_t>(p.size).Put<uint32_t>(p.incarnation);
}

bool GetPtr(WireReader& r, RawPtr* p) {
  uint64_t addr = 0;
  if (!r.Get(&addr) || !r.Get(&p->size) || !r.Get(&p->incarnation)) return false;
  p->addr = Addr::FromRaw(addr);
  return true;
}

bool GetPtrs(WireReader& r, std::vector<RawPtr>* out) {
  uint32_t n = 0;
  if (!r.Get(&n) || n > 4096) return false;
  out->resize(n);
  for (RawPtr& p : *out) {
    if (!GetPtr(r, &p)) return false;
  }
  return true;
}

// A 64-bit mix (splitmix64's finaliser).
uint64_t Mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::string EncodeNodeTables(const NodeTables& t) {
  WireWriter w;
  w.Put<uint64_t>(kDirectoryMagic)
      .Put<uint32_t>(t.owner)
      .Put<uint32_t>(t.threads)
      .Put<uint64_t>(t.pairs);
  w.Put<uint32_t>(t.guest_slices);
  PutPtr(w, t.claims);
  w.Put<uint64_t>(t.index_slots);
  w.Put<uint32_t>(static_cast<uint32_t>(t.index.size()));
  for (const RawPtr& p : t.index) PutPtr(w, p);
  for (const ClassTable& c : t.data) {
    w.Put<uint32_t>(c.per_thread).Put<uint32_t>(c.entries_per_object);
    w.Put<uint32_t>(static_cast<uint32_t>(c.objects.size()));
    for (const RawPtr& p : c.objects) PutPtr(w, p);
  }
  return w.Take();
}

absl::StatusOr<NodeTables> DecodeNodeTables(absl::string_view bytes) {
  WireReader r(bytes);
  uint64_t magic = 0;
  NodeTables t;
  if (!r.Get(&magic) || magic != kDirectoryMagic) {
    return absl::InvalidArgumentError("not a cuckoo directory (not written yet?)");
  }
  bool ok = r.Get(&t.owner) && r.Get(&t.threads) && r.Get(&t.pairs) && r.Get(&t.guest_slices) &&
            GetPtr(r, &t.claims) && r.Get(&t.index_slots) && GetPtrs(r, &t.index);
  for (ClassTable& c : t.data) {
    ok = ok && r.Get(&c.per_thread) && r.Get(&c.entries_per_object) && GetPtrs(r, &c.objects);
  }
  if (!ok) return absl::InvalidArgumentError("a truncated cuckoo directory");
  return t;
}

CuckooMap::CuckooMap(std::vector<NodeTables> nodes, uint32_t ways)
    : nodes_(std::move(nodes)), ways_(ways) {
  for (const NodeTables& n : nodes_) {
    first_slot_.push_back(index_slots_);
    index_slots_ += n.index_slots;
  }
}

absl::StatusOr<CuckooMap> CuckooMap::Create(std::vector<NodeTables> nodes, uint32_t ways) {
  if (nodes.empty() || nodes.size() > kMaxDataTables) {
    return absl::InvalidArgumentError(absl::StrCat("a cuckoo table over ", nodes.size(), " nodes"));
  }
  if (ways < 2 || ways > kMaxWays)
    return absl::InvalidArgumentError(absl::StrCat("cuckoo ways ", ways));
  std::sort(nodes.begin(), nodes.end(),
            [](const NodeTables& a, const NodeTables& b) { return a.owner < b.owner; });
  for (const NodeTables& n : nodes) {
    if (n.index_slots == 0 ||
        n.index.size() != (n.index_slots + kIteObjectEntries - 1) / kIteObjectEntries) {
      return absl::InvalidArgumentError(
          absl::StrCat("node ", n.owner, ": a malformed cuckoo index"));
    }
    for (const ClassTable& c : n.data) {
      if (c.entries_per_object == 0 ||
          uint64_t{c.objects.size()} * c.entries_per_object < uint64_t{c.per_thread} * n.slices() ||
          uint64_t{c.per_thread} * n.slices() > kMaxEntryIndex) {
        return absl::InvalidArgumentError(
            absl::StrCat("node ", n.owner, ": a malformed cuckoo data table"));
      }
    }
  }
  return CuckooMap(std::move(nodes), ways);
}

int CuckooMap::TableOf(NodeId node) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].owner == node) return static_cast<int>(i);
  }
  return -1;
}

std::array<uint64_t, kMaxWays> CuckooMap::Candidates(uint64_t key_hash) const {
  std::array<uint64_t, kMaxWays> slots{};
  for (uint32_t i = 0; i < ways_; ++i) {
    uint64_t s = Mix(key_hash + 0x9e3779b97f4a7c15ull * (i + 1)) % index_slots_;
    // Distinct slots: the next free one after a collision with an earlier candidate.
    for (bool clash = true; clash;) {
      clash = false;
      for (uint32_t j = 0; j < i; ++j) clash = clash || slots[j] == s;
      if (clash) s = (s + 1) % index_slots_;
    }
    slots[i] = s;
  }
  return slots;
}

RawLocation CuckooMap::IndexWord(uint64_t slot) const {
  const size_t n =
      std::upper_bound(first_slot_.begin(), first_slot_.end(), slot) - first_slot_.begin() - 1;
  const uint64_t local = slot - first_slot_[n];
  return RawLocation{nodes_[n].index[local / kIteObjectEntries],
                     static_cast<uint32_t>(local % kIteObjectEntries) * 8};
}

RawLocation CuckooMap::Entry(const EntryRef& ref) const {
  const ClassTable& c = nodes_[ref.table].data[ref.size_class];
  return RawLocation{c.objects[ref.entry / c.entries_per_object],
                     (ref.entry % c.entries_per_object) * kClassBytes[ref.size_class]};
}

}  // namespace farm::kv::cuckoo
