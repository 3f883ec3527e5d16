#include "graph/messages.h"

#include "absl/strings/str_cat.h"
#include "farm/api/wire.h"
#include "graph/layout.h"

namespace farm::graph {
namespace {

constexpr uint8_t kMessageVersion = 1;

absl::Status Malformed(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("malformed graph message: ", what));
}

// A cursor over a message that checks every size before reading.
class Reader {
 public:
  explicit Reader(absl::string_view b) : b_(b) {}
  template <typename T>
  bool Get(T* v) {
    if (b_.size() - at_ < sizeof(T)) return false;
    *v = LoadLe<T>(b_.data() + at_);
    at_ += sizeof(T);
    return true;
  }
  bool Bytes(size_t n, std::string* out) {
    if (b_.size() - at_ < n) return false;
    out->assign(b_.data() + at_, n);
    at_ += n;
    return true;
  }
  bool done() const { return at_ == b_.size(); }
  size_t left() const { return b_.size() - at_; }

 private:
  absl::string_view b_;
  size_t at_ = 0;
};

template <typename T>
void Put(std::string& out, T v) {
  char buf[sizeof(T)];
  StoreLe<T>(buf, v);
  out.append(buf, sizeof(T));
}

void PutEdge(std::string& out, const Link& l) {
  Put<int64_t>(out, l.id2);
  Put<int64_t>(out, l.time);
  Put<int32_t>(out, l.version);
  Put<uint8_t>(out, l.visibility == Visibility::kVisible ? 1 : 0);
  Put<uint8_t>(out, static_cast<uint8_t>(l.data.size()));
  out.append(l.data);
}

bool GetEdge(Reader& r, int64_t id1, int64_t type, Link* l) {
  uint8_t vis = 0, len = 0;
  l->id1 = id1;
  l->type = type;
  if (!r.Get(&l->id2) || !r.Get(&l->time) || !r.Get(&l->version) || !r.Get(&vis) || !r.Get(&len)) return false;
  if (vis > 1) return false;
  l->visibility = vis ? Visibility::kVisible : Visibility::kHidden;
  return r.Bytes(len, &l->data);
}

bool GetEdges(Reader& r, int64_t id1, int64_t type, std::vector<Link>* links) {
  uint32_t n = 0;
  if (!r.Get(&n) || n > r.left() / kEdgeHeaderBytes) return false;
  links->resize(n);
  for (Link& l : *links) {
    if (!GetEdge(r, id1, type, &l)) return false;
  }
  return true;
}

constexpr uint64_t kNodeHeaderBytes = 8 + 4 + 8 + 4 + 4 + 1;
constexpr uint64_t kShippedPtrBytes = 16;
constexpr uint64_t kListHeaderBytes = 8 + 8 + 4;

void PutPtr(std::string& out, const FatPtr& p) {
  Put<uint64_t>(out, p.addr.raw());
  Put<uint32_t>(out, p.size);
  Put<uint32_t>(out, p.incarnation);
}

bool GetPtr(Reader& r, FatPtr* p) {
  uint64_t raw = 0;
  if (!r.Get(&raw) || !r.Get(&p->size) || !r.Get(&p->incarnation)) return false;
  p->addr = Addr::FromRaw(raw);
  return !p->is_null();
}

void PutNodes(std::string& out, const ShipRequest& r) {
  Put<uint32_t>(out, static_cast<uint32_t>(r.nodes.size()));
  for (size_t i = 0; i < r.nodes.size(); ++i) {
    const Node& n = r.nodes[i];
    const std::vector<FatPtr>* chunks = r.chunks.empty() ? nullptr : &r.chunks[i];
    const bool inline_data = chunks == nullptr || chunks->empty();
    Put<int64_t>(out, n.id);
    Put<int32_t>(out, n.type);
    Put<int64_t>(out, n.version);
    Put<int32_t>(out, n.time);
    Put<uint32_t>(out, static_cast<uint32_t>(n.data.size()));
    Put<uint8_t>(out, inline_data ? 0 : static_cast<uint8_t>(chunks->size()));
    if (inline_data) {
      out.append(n.data);
    } else {
      for (const FatPtr& c : *chunks) PutPtr(out, c);
    }
  }
}

// Nodes with chunks get their data's size in `data` (its bytes are in the chunks).
bool GetNodes(Reader& r, ShipRequest* req) {
  uint32_t n = 0;
  if (!r.Get(&n) || n > r.left() / kNodeHeaderBytes) return false;
  req->nodes.resize(n);
  req->chunks.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Node& node = req->nodes[i];
    uint32_t bytes = 0;
    uint8_t chunks = 0;
    if (!r.Get(&node.id) || !r.Get(&node.type) || !r.Get(&node.version) || !r.Get(&node.time) || !r.Get(&bytes) ||
        !r.Get(&chunks)) {
      return false;
    }
    if (bytes > kMaxNodeDataBytes) return false;
    if (chunks == 0) {
      if (bytes > kMaxInlineNodeData || !r.Bytes(bytes, &node.data)) return false;
      continue;
    }
    if (bytes <= kMaxInlineNodeData || chunks != (bytes + kChunkDataBytes - 1) / kChunkDataBytes) return false;
    node.data.assign(bytes, '\0');
    req->chunks[i].resize(chunks);
    for (FatPtr& c : req->chunks[i]) {
      if (!GetPtr(r, &c)) return false;
    }
  }
  return true;
}

void PutLists(std::string& out, const ShipRequest& r) {
  Put<uint64_t>(out, r.token);
  Put<uint32_t>(out, static_cast<uint32_t>(r.lists.size()));
  for (const LinkList& list : r.lists) {
    Put<int64_t>(out, list.id1);
    Put<int64_t>(out, list.type);
    Put<uint32_t>(out, static_cast<uint32_t>(list.links.size()));
    for (const Link& l : list.links) PutEdge(out, l);
  }
}

bool GetLists(Reader& r, ShipRequest* req) {
  uint32_t n = 0;
  if (!r.Get(&req->token) || !r.Get(&n) || n > r.left() / kListHeaderBytes) return false;
  req->lists.resize(n);
  for (LinkList& list : req->lists) {
    if (!r.Get(&list.id1) || !r.Get(&list.type) || !GetEdges(r, list.id1, list.type, &list.links)) return false;
  }
  return true;
}

}  // namespace

uint64_t ShippedNodeBytes(const Node& node, size_t chunks) {
  return kNodeHeaderBytes + (chunks == 0 ? node.data.size() : chunks * kShippedPtrBytes);
}

uint64_t ShippedListBytes(const LinkList& list) {
  uint64_t bytes = kListHeaderBytes;
  for (const Link& l : list.links) bytes += kEdgeHeaderBytes + l.data.size();
  return bytes;
}

std::string EncodeShipRequest(const ShipRequest& r) {
  std::string out;
  Put<uint8_t>(out, kMessageVersion);
  Put<uint8_t>(out, static_cast<uint8_t>(r.op));
  Put<int64_t>(out, r.id1);
  Put<int64_t>(out, r.type);
  switch (r.op) {
    case ShipOp::kLoadLinks:
      Put<uint64_t>(out, r.token);
      [[fallthrough]];
    case ShipOp::kAddLinks:
      Put<uint32_t>(out, static_cast<uint32_t>(r.links.size()));
      for (const Link& l : r.links) PutEdge(out, l);
      break;
    case ShipOp::kDeleteLink:
      Put<int64_t>(out, r.id2);
      Put<uint8_t>(out, r.expunge ? 1 : 0);
      break;
    case ShipOp::kGetLinks:
      Put<uint32_t>(out, static_cast<uint32_t>(r.id2s.size()));
      for (int64_t id2 : r.id2s) Put<int64_t>(out, id2);
      break;
    case ShipOp::kGetLinkList:
      Put<int64_t>(out, r.range.min_time);
      Put<int64_t>(out, r.range.max_time);
      Put<uint32_t>(out, r.range.offset);
      Put<uint32_t>(out, r.range.limit);
      break;
    case ShipOp::kPutNodes:
      PutNodes(out, r);
      break;
    case ShipOp::kLoadLists:
      PutLists(out, r);
      break;
    case ShipOp::kIndexList:
      break;
    case ShipOp::kTakeNodeIds:
      Put<uint64_t>(out, r.count);
      break;
    case ShipOp::kResetNodeIds:
      Put<int64_t>(out, r.start_id);
      break;
  }
  return out;
}

absl::StatusOr<ShipRequest> DecodeShipRequest(absl::string_view bytes) {
  Reader r(bytes);
  uint8_t version = 0, op = 0;
  ShipRequest req;
  if (!r.Get(&version) || !r.Get(&op) || !r.Get(&req.id1) || !r.Get(&req.type)) return Malformed("short header");
  if (version != kMessageVersion) return Malformed(absl::StrCat("version ", version));
  req.op = static_cast<ShipOp>(op);
  switch (req.op) {
    case ShipOp::kLoadLinks:
      if (!r.Get(&req.token)) return Malformed("token");
      [[fallthrough]];
    case ShipOp::kAddLinks:
      if (!GetEdges(r, req.id1, req.type, &req.links)) return Malformed("links");
      break;
    case ShipOp::kDeleteLink: {
      uint8_t expunge = 0;
      if (!r.Get(&req.id2) || !r.Get(&expunge) || expunge > 1) return Malformed("delete");
      req.expunge = expunge;
      break;
    }
    case ShipOp::kGetLinks: {
      uint32_t n = 0;
      if (!r.Get(&n) || n > r.left() / 8) return Malformed("id2s");
      req.id2s.resize(n);
      for (int64_t& id2 : req.id2s) r.Get(&id2);
      break;
    }
    case ShipOp::kGetLinkList:
      req.range.id1 = req.id1;
      req.range.type = req.type;
      if (!r.Get(&req.range.min_time) || !r.Get(&req.range.max_time) || !r.Get(&req.range.offset) ||
          !r.Get(&req.range.limit)) {
        return Malformed("range");
      }
      break;
    case ShipOp::kPutNodes:
      if (!GetNodes(r, &req)) return Malformed("nodes");
      break;
    case ShipOp::kLoadLists:
      if (!GetLists(r, &req)) return Malformed("lists");
      break;
    case ShipOp::kIndexList:
      break;
    case ShipOp::kTakeNodeIds:
      if (!r.Get(&req.count)) return Malformed("count");
      break;
    case ShipOp::kResetNodeIds:
      if (!r.Get(&req.start_id)) return Malformed("start id");
      break;
    default:
      return Malformed(absl::StrCat("operation ", op));
  }
  if (!r.done()) return Malformed("trailing bytes");
  return req;
}

std::string EncodeShipReply(int64_t id1, int64_t type, const ShipReply& r) {
  std::string out;
  Put<uint8_t>(out, kMessageVersion);
  Put<uint8_t>(out, static_cast<uint8_t>(r.op));
  switch (r.op) {
    case ShipOp::kLoadLinks:
      Put<uint8_t>(out, r.appended ? 1 : 0);
      Put<uint64_t>(out, r.added);
      break;
    case ShipOp::kAddLinks:
      Put<uint64_t>(out, r.added);
      Put<uint32_t>(out, r.applied);
      break;
    case ShipOp::kPutNodes:
    case ShipOp::kLoadLists:
      Put<uint64_t>(out, r.added);
      break;
    case ShipOp::kDeleteLink:
      Put<uint8_t>(out, r.found ? 1 : 0);
      break;
    case ShipOp::kIndexList:
      Put<uint8_t>(out, r.indexed ? 1 : 0);
      break;
    case ShipOp::kTakeNodeIds:
      Put<int64_t>(out, r.first_id);
      break;
    case ShipOp::kResetNodeIds:
      break;
    case ShipOp::kGetLinks:
    case ShipOp::kGetLinkList:
      Put<uint32_t>(out, static_cast<uint32_t>(r.links.size()));
      for (const Link& l : r.links) PutEdge(out, l);
      break;
  }
  return out;
}

absl::StatusOr<ShipReply> DecodeShipReply(absl::string_view bytes, int64_t id1, int64_t type) {
  Reader r(bytes);
  uint8_t version = 0, op = 0;
  ShipReply reply;
  if (!r.Get(&version) || !r.Get(&op)) return Malformed("short reply");
  if (version != kMessageVersion) return Malformed(absl::StrCat("reply version ", version));
  reply.op = static_cast<ShipOp>(op);
  switch (reply.op) {
    case ShipOp::kLoadLinks: {
      uint8_t appended = 0;
      if (!r.Get(&appended) || appended > 1) return Malformed("reply appended");
      reply.appended = appended;
      if (!r.Get(&reply.added)) return Malformed("reply count");
      break;
    }
    case ShipOp::kAddLinks:
      if (!r.Get(&reply.added) || !r.Get(&reply.applied)) return Malformed("reply count");
      break;
    case ShipOp::kPutNodes:
    case ShipOp::kLoadLists:
      if (!r.Get(&reply.added)) return Malformed("reply count");
      break;
    case ShipOp::kDeleteLink: {
      uint8_t found = 0;
      if (!r.Get(&found) || found > 1) return Malformed("reply found");
      reply.found = found;
      break;
    }
    case ShipOp::kIndexList: {
      uint8_t indexed = 0;
      if (!r.Get(&indexed) || indexed > 1) return Malformed("reply indexed");
      reply.indexed = indexed;
      break;
    }
    case ShipOp::kTakeNodeIds:
      if (!r.Get(&reply.first_id) || reply.first_id < 1) return Malformed("reply first id");
      break;
    case ShipOp::kResetNodeIds:
      break;
    case ShipOp::kGetLinks:
    case ShipOp::kGetLinkList:
      if (!GetEdges(r, id1, type, &reply.links)) return Malformed("reply links");
      break;
    default:
      return Malformed(absl::StrCat("reply operation ", op));
  }
  if (!r.done()) return Malformed("trailing reply bytes");
  return reply;
}

}  // namespace farm::graph
