// The kv store's messages (ids from kKvMsgIds, farm/msg/message_ids.h).
//
//   kKvDirectoryMsgId  request: empty. Reply: the machine's directory (shard_map.h), or
//                      Unavailable while it has not created its shards.
//   kKvUpdateMsgId     request: an update of one key, shipped to the primary of the
//                      key's shard (UpdateRequest). Reply: UpdateReply.
//   kKvOpenMsgId       request: empty, to the catalog coordinator (TableHost). Reply:
//                      the table's whole map as a directory (every shard, in the map's
//                      order), or Unavailable while it cannot be opened yet.
//   kKvMapMsgId        request: empty, to a member. Reply: the map the member opened the
//                      table with (as kKvOpenMsgId's), or NotFound when it has not: a
//                      coordinator that joined later takes the cluster's map, it does
//                      not build another.
//
// Formats are versioned; decoding checks sizes before reading.
#ifndef FARM_KV_MESSAGES_H_
#define FARM_KV_MESSAGES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/key_ops.h"

namespace farm::kv {

inline constexpr MsgId kKvDirectoryMsgId = kKvMsgIds[0];
inline constexpr MsgId kKvUpdateMsgId = kKvMsgIds[1];
inline constexpr MsgId kKvOpenMsgId = kKvMsgIds[2];
inline constexpr MsgId kKvMapMsgId = kKvMsgIds[3];

// What tells one hashtable of the cluster from another: the kv service's own table and
// tables other applications keep (the graph's id index). Each needs its own catalog
// address, message ids (from its owner's range) and metadata key.
struct TableIdentity {
  const char* name = "kv";  // in logs, and the owner of its message handlers
  Addr catalog{0x6b764361u, 0};  // routes the catalog requests (no region need exist there)
  MsgId directory_msg = kKvDirectoryMsgId;
  MsgId update_msg = kKvUpdateMsgId;
  MsgId open_msg = kKvOpenMsgId;
  MsgId map_msg = kKvMapMsgId;
  const char* directory_metadata = "kv.directory";  // where a node keeps its shards' directory
};

// Views into the message; valid while its payload is.
struct UpdateRequest {
  OpKind kind = OpKind::kPut;
  absl::string_view key;
  absl::string_view value;
  int64_t delta = 0;
};

// The encoding's size, and the encoding written at dst (exactly that many bytes): for
// a message built in place (msgSend with a writer).
size_t UpdateRequestBytes(const UpdateRequest& r);
void WriteUpdateRequest(const UpdateRequest& r, char* dst);
std::string EncodeUpdateRequest(const UpdateRequest& r);
absl::StatusOr<UpdateRequest> DecodeUpdateRequest(absl::string_view bytes);

// One operation's outcome (KeyOpResult on the wire).
std::string EncodeUpdateReply(const KeyOpResult& r);
absl::StatusOr<KeyOpResult> DecodeUpdateReply(absl::string_view bytes);

}  // namespace farm::kv

#endif  // FARM_KV_MESSAGES_H_
