// The id index: LinkBench's 64-bit ids to vertex objects, kept in a kv hashtable of the
// graph's own (kv/table_host.h with the graph's TableIdentity), and the node id counter
// kept in the same table. Key formats: u8 'v' + i64 id -> the vertex's FatPtr (16 bytes);
// "graph.next_node_id" -> the last id AddNode handed out (decimal, kv's INCR format).
#ifndef FARM_GRAPH_INDEX_H_
#define FARM_GRAPH_INDEX_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/messages.h"
#include "kv/shard_map.h"
#include "kv/table_host.h"

namespace farm::graph {

inline constexpr absl::string_view kNextNodeIdKey = "graph.next_node_id";

std::string VertexKey(int64_t id);
std::string EncodeVertexPtr(FatPtr ptr);
// nullopt for a value that is not a pointer (a corrupt index).
std::optional<FatPtr> DecodeVertexPtr(absl::string_view value);

// Where id's vertex lives: beside its index entry (the entry's bucket), so the
// machine of that bucket's region runs the id's shipped operations.
Addr VertexHome(const kv::ShardMap& index, int64_t id);

// The index table's identity: its own catalog address, message ids from the graph's
// range (farm/msg/message_ids.h) and metadata key.
kv::TableIdentity IndexIdentity();

}  // namespace farm::graph

#endif  // FARM_GRAPH_INDEX_H_
