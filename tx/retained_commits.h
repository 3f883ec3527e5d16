// Single-machine commits that a failure can leave half replicated, and what finishes
// them (thread_context.h, "CommitSingleMachine").
//
// A single-machine commit has no prepare phase: its primary sends the commit record
// straight to the backups of the regions it writes, and each backup applies it on
// arrival (once logged). The decision is commit as soon as one backup may have applied
// it, so a primary that dies after some backups applied the record and before others
// did leaves survivors that disagree — and the regions it was primary of are promoted to different survivors, so
// without help the promoted copies would hold one part of the transaction and not the
// other. Two pieces close that gap:
//
//   ApplySequencer (the primary's thread): numbers the records it sends, and tells the
//     backups, with each record, the watermark below which every record reached all of
//     its backups.
//   RetainedCommits (a backup's thread): every record it applied, whole — the entries of
//     every region the transaction writes, not only those of the copies here — until
//     the sender's watermark passes it.
//
// At failover the new primary of a promoted region gathers, from every surviving
// member, the retained records with an entry in that region (kTxRetainedMsgId) and
// applies those its copy lacks before the region serves (BackupLog::ApplyMissing). So
// a transaction some survivor applied is applied by every promoted region it wrote,
// and one no survivor applied is applied nowhere: all or nothing, as its primary would
// have had it. Applying again is harmless: an entry is applied only to an object still
// at the version the primary locked it from.
//
// A restart has no retained records in memory: a backup logs each record with its
// number and watermark (storage::NodeLogType::kTxReplicated), and replay lists those
// no watermark passed (recovery.h, "retained"); they answer kTxRetainedMsgId too, and
// a restarted primary reconciles its regions' replicas with them before they serve.
//
// Threads: each object belongs to one worker thread (no locking).
#ifndef FARM_TX_RETAINED_COMMITS_H_
#define FARM_TX_RETAINED_COMMITS_H_

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "farm/base/address.h"
#include "tx/log_record.h"

namespace farm::tx {

// The primary's side, per thread: sequence numbers are handed out in order and ended
// in any order; the watermark is the lowest number not yet ended (the next one when
// none is open).
class ApplySequencer {
 public:
  uint64_t Begin() {
    open_.push_back(false);
    return first_ + open_.size() - 1;
  }
  // Ends `sequence` (handed out by Begin and not ended yet).
  void End(uint64_t sequence);
  uint64_t watermark() const { return first_; }
  size_t open() const;

 private:
  uint64_t first_ = 1;     // the number of open_.front()
  std::deque<bool> open_;  // ended?, from first_ on
};

class RetainedCommits {
 public:
  // Keeps `record` (a commit record's encoding, log_record.h, decoded once already), the
  // one numbered `sequence` of thread `sender_thread` on node `sender`, and drops that
  // thread's records numbered below `watermark`. A record kept already (the sender sent
  // it again) is kept once. Kept encoded: one allocation per record, and decoded again
  // only at failover.
  void Retain(NodeId sender, uint16_t sender_thread, uint64_t sequence, uint64_t watermark, std::string record);
  // The same, the encoding copied into the string of a record dropped earlier: once
  // records of this size have come and gone, keeping one allocates nothing.
  void Retain(NodeId sender, uint16_t sender_thread, uint64_t sequence, uint64_t watermark,
              absl::string_view record);
  // The encodings of the records kept with an entry in one of `regions`, in a fixed
  // order (sender, thread, sequence); valid until the next call of another method.
  std::vector<absl::string_view> Touching(const absl::flat_hash_set<RegionId>& regions) const;
  // Failover: `departed` left the configuration (or came back as another process).
  // Their records are set aside — a sender that returns starts its numbers anew — and
  // dropped once `forget_after` has passed (by then the promoted regions have gathered
  // them); Touching still finds them until then.
  void Departed(const absl::flat_hash_set<NodeId>& departed, absl::Time now, absl::Duration forget_after);
  // Drops the set-aside records whose time has come.
  void Purge(absl::Time now);

  size_t size() const { return size_; }
  // Strings of dropped records kept for reuse (at most kMaxSpare).
  size_t spare() const { return spare_.size(); }

  static constexpr size_t kMaxSpare = 32;
  static constexpr size_t kMaxSpareCapacity = 16 << 10;  // larger ones are freed

 private:
  struct Stream {
    std::deque<std::pair<uint64_t, std::string>> records;  // by sequence
  };
  using Position = std::deque<std::pair<uint64_t, std::string>>::iterator;
  // Drops the stream's records below `watermark`; where record `sequence` goes, or
  // nullptr when it is not to be kept (late, or kept already).
  Stream* Admit(NodeId sender, uint16_t sender_thread, uint64_t sequence, uint64_t watermark, Position* at);
  struct SetAside {
    absl::Time forget_at;
    uint64_t key;
    Stream stream;
  };
  // Key: sender << 16 | sender thread.
  absl::flat_hash_map<uint64_t, Stream> streams_;
  std::vector<SetAside> departed_;  // in the order they were set aside
  size_t size_ = 0;
  std::vector<std::string> spare_;
};

}  // namespace farm::tx

#endif  // FARM_TX_RETAINED_COMMITS_H_
