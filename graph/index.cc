#include "graph/index.h"

#include "farm/api/wire.h"
#include "kv/layout.h"

namespace farm::graph {

std::string VertexKey(int64_t id) {
  std::string key(9, '\0');
  key[0] = 'v';
  StoreLe<int64_t>(key.data() + 1, id);
  return key;
}

std::string EncodeVertexPtr(FatPtr ptr) {
  std::string v(16, '\0');
  StoreLe<uint64_t>(v.data(), ptr.addr.raw());
  StoreLe<uint32_t>(v.data() + 8, ptr.size);
  StoreLe<uint32_t>(v.data() + 12, ptr.incarnation);
  return v;
}

std::optional<FatPtr> DecodeVertexPtr(absl::string_view value) {
  if (value.size() != 16) return std::nullopt;
  FatPtr p;
  p.addr = Addr::FromRaw(LoadLe<uint64_t>(value.data()));
  p.size = LoadLe<uint32_t>(value.data() + 8);
  p.incarnation = LoadLe<uint32_t>(value.data() + 12);
  if (p.is_null()) return std::nullopt;
  return p;
}

Addr VertexHome(const kv::ShardMap& index, int64_t id) {
  const kv::Home home = index.Locate(kv::HashKey(VertexKey(id)));
  return index.Bucket(home.shard, home.bucket).addr;
}

kv::TableIdentity IndexIdentity() {
  kv::TableIdentity id;
  id.name = "graph";
  id.catalog = Addr{0x67724361u, 0};
  id.directory_msg = kGraphMsgIds[0];
  id.update_msg = kGraphMsgIds[1];
  id.open_msg = kGraphMsgIds[2];
  id.map_msg = kGraphMsgIds[4];  // [3] is the graph's own kGraphShipMsgId
  id.directory_metadata = "graph.index_directory";
  return id;
}

}  // namespace farm::graph
