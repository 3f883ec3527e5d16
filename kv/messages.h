// The kv store's messages (ids from kKvMsgIds, farm/msg/message_ids.h).
//
//   kKvDirectoryMsgId  request: empty. Reply: the machine's directory (shard_map.h), or
//                      Unavailable while it has not created its shards.
//   kKvUpdateMsgId     request: an update of one key, shipped to the primary of the
//                      key's shard (UpdateRequest). Reply: UpdateReply.
//   kKvOpenMsgId       request: empty, to the catalog coordinator (TableHost). Reply:
//                      the table's whole map as a directory (every shard, in the map's
//                      order), or Unavailable while it cannot be opened yet.
//
// Formats are versioned; decoding checks sizes before reading.
#ifndef FARM_KV_MESSAGES_H_
#define FARM_KV_MESSAGES_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/farm.h"
#include "kv/table_ops.h"

namespace farm::kv {

inline constexpr MsgId kKvDirectoryMsgId = kKvMsgIds[0];
inline constexpr MsgId kKvUpdateMsgId = kKvMsgIds[1];
inline constexpr MsgId kKvOpenMsgId = kKvMsgIds[2];

// Views into the message; valid while its payload is.
struct UpdateRequest {
  OpKind kind = OpKind::kPut;
  absl::string_view key;
  absl::string_view value;
  int64_t delta = 0;
};

std::string EncodeUpdateRequest(const UpdateRequest& r);
absl::StatusOr<UpdateRequest> DecodeUpdateRequest(absl::string_view bytes);

// One operation's outcome (KeyOpResult on the wire).
std::string EncodeUpdateReply(const KeyOpResult& r);
absl::StatusOr<KeyOpResult> DecodeUpdateReply(absl::string_view bytes);

}  // namespace farm::kv

#endif  // FARM_KV_MESSAGES_H_
