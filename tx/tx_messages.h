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
//   kTxApplyMsgId     a single-machine transaction's commit record, every entry of it,
//                     for each backup of any region it writes (no prepare phase), with
//                     the sender thread's sequence number and watermark
//                     (EncodeApplyRequest): backups apply the entries of their copies
//                     and retain the whole record until the watermark passes it
//                     (retained_commits.h).
//   kTxShipMsgId      a lock record then a kValidate record: a single-machine
//                     transaction's commit, shipped to the primary of all its objects.
//   kTxOutcomeMsgId   recovery: what the receiver's log said of these transactions at
//                     its start (TxOutcome each), for a restarted node's in-doubt ones;
//                     kCommitted also for those it committed lately (RecentCommits).
//   kTxVoteMsgId      failover recovery: like kTxOutcomeMsgId, answered only once the
//                     receiver has fenced the configuration the asker recovers in
//                     (Unavailable before: ask again), so that no coordinator of an
//                     earlier epoch can commit there after it answered.
//   kTxRetainedMsgId  failover: the single-machine commit records the receiver retains
//                     with an entry in the asker's newly promoted regions (a page of
//                     them), answered only once it has fenced the asker's epoch, so
//                     that the asker sees every record its dead primary's backups took.
//   kTxReconcileMsgId restart: single-machine commit records that a restarted primary
//                     gathered for its regions (EncodeReconcile); the receiver applies
//                     what its copies of those regions lack, logs it, then answers.
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
inline constexpr MsgId kTxRetainedMsgId = kTxMsgIds[8];
inline constexpr MsgId kTxReconcileMsgId = kTxMsgIds[9];

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

// kTxApplyMsgId's payload: u8 format (kTxApplyFormat), u8 reserved (0), u16 sender
// thread, u32 sender node, u32 sender boot, u32 reserved (0), u64 sequence, u64
// watermark, then the commit record (log_record.h). `sequence` numbers the records one
// thread of the primary sends in one boot (every backup of one record gets the same
// number); `watermark`: every record of that thread numbered below it has reached all
// its backups and the primary's own log, so they need not retain it. A backup logs the
// request whole (storage::NodeLogType::kTxReplicated): its replay then knows which
// records may still be missing at another replica (recovery.h, "retained").
inline constexpr uint8_t kTxApplyFormat = 2;
inline constexpr size_t kApplyHeaderBytes = 32;
struct ApplyRequest {
  NodeId sender = kInvalidNode;
  uint16_t sender_thread = 0;
  uint32_t sender_boot = 0;
  uint64_t sequence = 0;
  uint64_t watermark = 0;
};
// `record`'s entries go as a commit record of `epoch`, whatever its own kind and epoch.
absl::Status EncodeApplyRequest(const ApplyRequest& header, const LogRecord& record, uint64_t epoch,
                                std::string* out);
// The header alone (the record after it not looked at): InvalidArgument when short or
// of another format.
absl::Status DecodeApplyHeader(absl::string_view in, ApplyRequest* header);
// Decodes `in` into `header` and `record` (a view of `in`: valid while it is);
// `record_bytes` (optional) gets the record's encoding within `in`. InvalidArgument or
// DataLoss for a malformed request, or a record that is not a commit.
absl::Status DecodeApplyRequest(absl::string_view in, ApplyRequest* header, LogRecordView* record,
                                absl::string_view* record_bytes = nullptr);

// kTxRetainedMsgId's request: u8 format (kTxApplyFormat), u16 region count, u32 first
// (the page: records numbered from it), u64 epoch, then count × u32 region. The answer:
// u8 format, u32 total (records that match), u16 count, then `count` records back to
// back (records first .. first+count-1 of the receiver's matches, in a fixed order). An
// answer holds at most kMaxRetainedAnswerBytes of records, and at least one.
inline constexpr uint16_t kMaxRetainedRegions = 4096;
inline constexpr size_t kMaxRetainedAnswerBytes = 48 * 1024;
struct RetainedQuery {
  uint64_t epoch = 0;
  uint32_t first = 0;
  std::vector<RegionId> regions;
};
struct RetainedPage {
  uint32_t total = 0;
  std::vector<LogRecord> records;
};
absl::StatusOr<std::string> EncodeRetainedQuery(const RetainedQuery& query);
absl::StatusOr<RetainedQuery> DecodeRetainedQuery(absl::string_view in);
// `records` are encoded records (EncodeLogRecord), concatenated, `count` of them.
std::string EncodeRetainedPage(uint32_t total, uint16_t count, absl::string_view records);
absl::StatusOr<RetainedPage> DecodeRetainedPage(absl::string_view in);

// kTxReconcileMsgId's request: u8 format (kTxApplyFormat), u16 region count, u16 record
// count, then count × u32 region and the records back to back (EncodeLogRecord, commit
// records). A request holds at most kMaxRetainedAnswerBytes of records, and at least one.
struct ReconcileRequest {
  std::vector<RegionId> regions;
  std::vector<LogRecord> records;
};
absl::StatusOr<std::string> EncodeReconcile(const std::vector<RegionId>& regions, uint16_t count,
                                            absl::string_view records);
absl::StatusOr<ReconcileRequest> DecodeReconcile(absl::string_view in);

}  // namespace farm::tx

#endif  // FARM_TX_TX_MESSAGES_H_
