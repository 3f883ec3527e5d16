// The graph's records as LinkBench defines them (the MySQL store is the reference:
// ../shared/workloads/WORKLOADS.md), and their limits.
//
//   Node  id (allocated sequentially by AddNode), type, version, time (s), data ≤ 1 MiB
//   Link  (id1, type, id2) unique; visibility (kVisible or kHidden), version, time (ms),
//         data ≤ 255 bytes
//
// A link list is the links of one (id1, type); its count is its number of visible
// links. Links exist independently of nodes: id1 and id2 need not name nodes.
#ifndef FARM_GRAPH_TYPES_H_
#define FARM_GRAPH_TYPES_H_

#include <cstdint>
#include <string>
#include <vector>

namespace farm::graph {

inline constexpr uint64_t kMaxNodeDataBytes = 1 << 20;  // LinkBench's node data limit
inline constexpr uint64_t kMaxLinkDataBytes = 255;      // LinkBench's link data limit
// getLinkList's default and largest page (LinkBench's range limit).
inline constexpr uint32_t kDefaultRangeLimit = 10000;

// LinkBench's defaults (FBWorkload.properties and the driver's constants).
inline constexpr int64_t kDefaultLinkType = 123456789;
inline constexpr int32_t kDefaultNodeType = 2048;

enum class Visibility : uint8_t { kHidden = 0, kVisible = 1 };

struct Node {
  int64_t id = 0;
  int32_t type = 0;
  int64_t version = 0;
  int32_t time = 0;  // seconds
  std::string data;

  friend bool operator==(const Node&, const Node&) = default;
};

struct Link {
  int64_t id1 = 0;
  int64_t type = 0;
  int64_t id2 = 0;
  Visibility visibility = Visibility::kVisible;
  int32_t version = 0;
  int64_t time = 0;  // milliseconds
  std::string data;

  friend bool operator==(const Link&, const Link&) = default;
};

// The links of one (id1, type) in a bulk load (GraphStore::LoadLinkLists); every link's
// id1 and type are these.
struct LinkList {
  int64_t id1 = 0;
  int64_t type = 0;
  std::vector<Link> links;
};

// getLinkList's query: visible links of (id1, type) with min_time <= time <= max_time,
// newest first (ties: larger id2 first), skipping `offset`, at most `limit`.
struct LinkRange {
  int64_t id1 = 0;
  int64_t type = 0;
  int64_t min_time = 0;
  int64_t max_time = INT64_MAX;
  uint32_t offset = 0;
  uint32_t limit = kDefaultRangeLimit;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_TYPES_H_
