// The graph's shipped operations (paper 4.4: assoc_get is function-shipped to the
// machine of the source node; updates of a node's links run there too, as
// single-machine transactions when the vertex, its lists and its index entry are
// collocated, which placement hints make the common case).
//
//   kGraphShipMsgId  request: ShipRequest, sent to the primary of the id1's index
//                    bucket (the vertex lives beside it; kTakeNodeIds and
//                    kResetNodeIds: of the id counter's bucket, node_ids.h). Reply:
//                    ShipReply, or the operation's error.
//
// Format (versioned; decoding checks every size before reading):
//   request  u8 version, u8 op, i64 id1, i64 type, then by op:
//              kAddLinks    u32 n, n edges (layout.h's edge encoding)
//              kDeleteLink  i64 id2, u8 expunge
//              kGetLinks    u32 n, n × i64 id2
//              kGetLinkList i64 min_time, i64 max_time, u32 offset, u32 limit
//              kLoadLinks   u64 token, u32 n, n edges
//              kPutNodes    u32 n, n × (i64 id, i32 type, i64 version, i32 time, u32 data
//                           bytes, u8 chunks; the data when chunks is 0, else that many
//                           chunk FatPtrs: u64 address, u32 size, u32 incarnation)
//              kLoadLists   u64 token, u32 lists, each i64 id1, i64 type, u32 n, n edges
//              kIndexList   (nothing)
//              kTakeNodeIds u64 ids asked for
//              kResetNodeIds i64 start id
//            (kPutNodes and kLoadLists carry several ids, all of whose index entries are
//            in one region, the header's id1 one of them: the request goes to its machine)
//   reply    u8 version, u8 op, then by op:
//              kAddLinks    u64 links added, u32 links applied (a prefix of the request's)
//              kLoadLinks   u8 appended (0: the load goes on by kAddLinks), u64 links added
//              kPutNodes    u64 nodes written (all of them)
//              kLoadLists   u64 links added
//              kDeleteLink  u8 found
//              kIndexList   u8 indexed
//              kTakeNodeIds i64 the first id
//              kResetNodeIds (nothing)
//              kGetLinks,
//              kGetLinkList u32 n, n edges
#ifndef FARM_GRAPH_MESSAGES_H_
#define FARM_GRAPH_MESSAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "graph/types.h"

namespace farm::graph {

inline constexpr MsgId kGraphShipMsgId = kGraphMsgIds[3];
// Edges a shipped AddLinks carries at most (bytes): a request and the commit record of
// its transaction must each fit one message (a quarter of a 256 KiB ring).
inline constexpr uint32_t kMaxShippedEdgeBytes = 16 * 1024;
// Edges one step of a load into an empty list (kLoadLinks) carries at most (bytes): its
// transaction writes at most 10 new blocks, the tail and the head (12 objects of
// kMaxBlockBytes, about 51 KB stored) and the vertex, under the 65,504 bytes of a
// commit record; fewer, larger steps (the hub's list is loaded one step after another).
inline constexpr uint32_t kMaxShippedLoadEdgeBytes = 36 * 1024;
// A reply's size at most (bytes); a page larger than this is not shipped.
inline constexpr uint32_t kMaxShippedReplyBytes = 56 * 1024;
// A kPutNodes or kLoadLists request's size at most (bytes; the executor splits it into
// transactions that fit a commit record).
inline constexpr uint32_t kMaxShippedLoadBytes = 48 * 1024;

enum class ShipOp : uint8_t {
  kAddLinks = 1,
  kDeleteLink = 2,
  kGetLinks = 3,
  kGetLinkList = 4,
  kLoadLinks = 5,
  kPutNodes = 6,
  kLoadLists = 7,
  // Gives a list its indexes (list_index.h) if it has more than min_blocks blocks and
  // none yet: sent at the end of a load that appended a long list.
  kIndexList = 8,
  // Node ids and their reset, run where the id counter's block is (node_ids.h).
  kTakeNodeIds = 9,
  kResetNodeIds = 10,
};

struct ShipRequest {
  ShipOp op = ShipOp::kAddLinks;
  int64_t id1 = 0;
  int64_t type = 0;
  std::vector<Link> links;     // kAddLinks, kLoadLinks (id1 and type taken from the request)
  int64_t id2 = 0;             // kDeleteLink
  bool expunge = false;        // kDeleteLink
  std::vector<int64_t> id2s;   // kGetLinks
  LinkRange range;             // kGetLinkList (id1 and type taken from the request)
  uint64_t token = 0;          // kLoadLinks, kLoadLists
  std::vector<Node> nodes;     // kPutNodes: each at its id
  std::vector<std::vector<FatPtr>> chunks;  // kPutNodes: each node's chunks (empty: data inline)
  std::vector<LinkList> lists;              // kLoadLists
  uint64_t count = 0;          // kTakeNodeIds
  int64_t start_id = 0;        // kResetNodeIds
};

struct ShipReply {
  ShipOp op = ShipOp::kAddLinks;
  uint64_t added = 0;       // kAddLinks, kLoadLinks, kLoadLists; kPutNodes: nodes written
  bool appended = false;    // kLoadLinks
  uint32_t applied = 0;     // kAddLinks
  bool found = false;       // kDeleteLink
  bool indexed = false;     // kIndexList: the list has its indexes (built now or before)
  std::vector<Link> links;  // kGetLinks, kGetLinkList
  int64_t first_id = 0;     // kTakeNodeIds
};

// What one node or one list adds to a kPutNodes or kLoadLists request (bytes).
uint64_t ShippedNodeBytes(const Node& node, size_t chunks);
uint64_t ShippedListBytes(const LinkList& list);

std::string EncodeShipRequest(const ShipRequest& r);
absl::StatusOr<ShipRequest> DecodeShipRequest(absl::string_view bytes);
std::string EncodeShipReply(int64_t id1, int64_t type, const ShipReply& r);
absl::StatusOr<ShipReply> DecodeShipReply(absl::string_view bytes, int64_t id1, int64_t type);

}  // namespace farm::graph

#endif  // FARM_GRAPH_MESSAGES_H_
