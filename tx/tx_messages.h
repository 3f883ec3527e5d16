// The transaction protocol's messages (paper section 3.4), between a coordinator's
// thread and the participants' threads. Requests from one coordinator thread reach the
// same thread of each participant node (msg_thread.h), so a transaction's PREPARE,
// COMMIT and ABORT meet the same Participant and BackupLog there.
//
//   kTxPrepareMsgId   a lock record (log_record.h) with the entries the node is primary
//                     or backup of, then the transaction's participants (EncodePrepare):
//                     primaries lock theirs, backups keep theirs; all log the whole.
//   kTxValidateMsgId  a kValidate record: the versions read of objects the node is
//                     primary of.
//   kTxDecideMsgId    TxDecision: commit (as backup, then as primary) or abort.
//   kTxApplyMsgId     a commit record with its entries, for backups of a single-machine
//                     transaction (no prepare phase).
//   kTxShipMsgId      a lock record then a kValidate record: a single-machine
//                     transaction's commit, shipped to the primary of all its objects.
//   kTxOutcomeMsgId   recovery: what the receiver's log said of these transactions at
//                     its start (TxOutcome each), for a restarted node's in-doubt ones;
//                     kCommitted also for those it committed lately (RecentCommits).
//   kTxVoteMsgId      failover recovery: like kTxOutcomeMsgId, answered only once the
//                     receiver has fenced the configuration the asker recovers in
//                     (Unavailable before: ask again), so that no coordinator of an
//                     earlier epoch can commit there after it answered.
// Answers are empty (OK) or the error; every payload is size- and tag-checked.
#ifndef FARM_TX_TX_MESSAGES_H_
#define FARM_TX_TX_MESSAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/msg/message.h"
#include "tx/log_record.h"

namespace farm::tx {

inline constexpr MsgId kTxPrepareMsgId = kTxMsgIds[1];
inline constexpr MsgId kTxValidateMsgId = kTxMsgIds[2];
inline constexpr MsgId kTxDecideMsgId = kTxMsgIds[3];
inline constexpr MsgId kTxApplyMsgId = kTxMsgIds[4];
inline constexpr MsgId kTxShipMsgId = kTxMsgIds[5];
inline constexpr MsgId kTxOutcomeMsgId = kTxMsgIds[6];
inline constexpr MsgId kTxVoteMsgId = kTxMsgIds[7];

inline constexpr uint8_t kTxDecisionFormat = 1;

enum class Decision : uint8_t {
  kCommitBackup = 1,   // apply the kept record to the backup copies
  kCommitPrimary = 2,  // apply the locked writes and unlock
  kAbort = 3,          // release locks and drop records
};

struct TxDecision {
  Decision decision = Decision::kAbort;
  uint64_t transaction = 0;
};

// 16 bytes: u8 format, u8 decision, 6 reserved (0), u64 transaction.
std::string EncodeDecision(const TxDecision& d);
absl::StatusOr<TxDecision> DecodeDecision(absl::string_view in);

// PREPARE's payload, and the kTxPrepared record a participant logs: the lock record,
// then every node PREPARE goes to — the logs that can hold the transaction's decision,
// which recovery must hear before it settles the transaction:
//   lock record | u8 format | u16 count | count × u32 node
struct PrepareRequest {
  LogRecord record;
  std::vector<NodeId> participants;
};
absl::Status EncodePrepare(const LogRecord& record, const std::vector<NodeId>& participants, std::string* out);
absl::StatusOr<PrepareRequest> DecodePrepare(std::string_view in);

// What a node's log says of a transaction (its last record there).
enum class TxOutcome : uint8_t { kUnknown = 0, kPrepared = 1, kCommitted = 2, kAborted = 3 };

// A transaction as recovery names it: its id and the configuration epoch it ran in (an
// id alone may repeat across a coordinator's restarts when it keeps no log of its own:
// a compute-only member; a rejoining member always gets a new epoch).
struct TxKey {
  uint64_t transaction = 0;
  uint64_t epoch = 0;
  friend bool operator==(const TxKey&, const TxKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TxKey& k) {
    return H::combine(std::move(h), k.transaction, k.epoch);
  }
};

// Request: u8 format, u32 count, count × (u64 transaction, u64 epoch). Answer: u8
// format, u32 count, count × u8 TxOutcome. At most kMaxOutcomeQuery per request.
inline constexpr uint32_t kMaxOutcomeQuery = 4096;
std::string EncodeOutcomeQuery(const std::vector<TxKey>& transactions);
absl::StatusOr<std::vector<TxKey>> DecodeOutcomeQuery(absl::string_view in);
// kTxVoteMsgId's request: u64 the epoch recovery runs in, then an outcome query. The
// answer is EncodeOutcomes'.
struct VoteQuery {
  uint64_t epoch = 0;
  std::vector<TxKey> transactions;
};
std::string EncodeVoteQuery(uint64_t epoch, const std::vector<TxKey>& transactions);
absl::StatusOr<VoteQuery> DecodeVoteQuery(absl::string_view in);
std::string EncodeOutcomes(const std::vector<TxOutcome>& outcomes);
absl::StatusOr<std::vector<TxOutcome>> DecodeOutcomes(absl::string_view in, size_t expected);

}  // namespace farm::tx

#endif  // FARM_TX_TX_MESSAGES_H_
