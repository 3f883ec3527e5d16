#include "tx/recovery.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "alloc/durable_records.h"
#include "farm/base/object_codec.h"
#include "farm/base/wire.h"
#include "farm/storage/node_log_types.h"
#include "tx/backup_log.h"
#include "tx/tx_messages.h"

namespace farm::tx {
namespace {

using storage::NodeLogType;

inline constexpr uint8_t kNodeRecordFormat = 1;

absl::Status Damaged(const storage::LogRecordView& r, absl::string_view what) {
  return absl::DataLossError(
      absl::StrFormat("%s: record at offset %d (type %d): %s", r.file, r.offset, r.type, what));
}

// The transaction a decision names: a bare u64.
std::optional<uint64_t> DecidedTransaction(const storage::LogRecordView& r) {
  if (r.payload.size() != sizeof(uint64_t)) return std::nullopt;
  return LoadLe<uint64_t>(r.payload.data());
}

// The transaction record of a kTxPrepared/kTxApplied/kTxReplicated record (the last
// behind its kTxApplyMsgId header: tx_messages.h).
std::string_view TxRecordBytes(const storage::LogRecordView& r) {
  std::string_view bytes(r.payload.data(), r.payload.size());
  if (static_cast<NodeLogType>(r.type) == NodeLogType::kTxReplicated) {
    bytes.remove_prefix(std::min(bytes.size(), kApplyHeaderBytes));
  }
  return bytes;
}

// The transaction of one: its log_record.h header carries the id at byte 8 and the
// epoch at byte 16.
std::optional<TxKey> RecordTransaction(const storage::LogRecordView& r) {
  const std::string_view bytes = TxRecordBytes(r);
  if (bytes.size() < kLogHeaderBytes) return std::nullopt;
  return TxKey{LoadLe<uint64_t>(bytes.data() + 8), LoadLe<uint64_t>(bytes.data() + 16)};
}

// The single-machine commit records one thread of a primary sent in one boot, as a
// backup logged them (kTxReplicated), and the highest watermark among them: the records
// numbered from it on may have reached some replicas and not others when the node
// stopped (retained_commits.h).
using StreamKey = std::tuple<NodeId, uint16_t, uint32_t>;  // sender, thread, boot
struct Stream {
  uint64_t watermark = 0;
  std::vector<std::pair<uint64_t, size_t>> records;  // sequence, index in the log
};

enum class Fate : uint8_t { kUndecided, kCommit, kAbort };

}  // namespace

std::string EncodeBoot(uint32_t boot) { return WireWriter().Put(kNodeRecordFormat).Put(boot).Take(); }

std::string EncodeMetadata(absl::string_view name, absl::string_view value) {
  return WireWriter()
      .Put(kNodeRecordFormat)
      .Put(static_cast<uint16_t>(name.size()))
      .Bytes(name)
      .Put(static_cast<uint32_t>(value.size()))
      .Bytes(value)
      .Take();
}

std::string EncodeRegionImage(RegionId region, uint64_t offset, absl::string_view bytes) {
  return alloc::EncodeRegionImage(region, offset, bytes);  // one format, alloc's
}

std::string EncodeTxOutcomes(absl::Span<const TxKey> committed) {
  WireWriter w;
  w.Put(kNodeRecordFormat).Put(static_cast<uint32_t>(committed.size()));
  for (const TxKey& k : committed) w.Put(k.transaction).Put(k.epoch);
  return w.Take();
}

std::string EncodeCheckpointEnd(uint64_t next_segment, uint64_t records) {
  return WireWriter().Put(kNodeRecordFormat).Put(next_segment).Put(records).Take();
}

absl::StatusOr<CheckpointEnd> DecodeCheckpointEnd(absl::string_view payload) {
  WireReader in(payload);
  uint8_t format = 0;
  CheckpointEnd end;
  if (!in.Get(&format) || format != kNodeRecordFormat || !in.Get(&end.next_segment) || !in.Get(&end.records) ||
      !in.done()) {
    return absl::DataLossError("malformed checkpoint end record");
  }
  return end;
}

namespace {

absl::Status DecodeTxOutcomes(absl::string_view payload, std::vector<TxKey>* out) {
  WireReader in(payload);
  uint8_t format = 0;
  uint32_t count = 0;
  if (!in.Get(&format) || format != kNodeRecordFormat || !in.Get(&count) ||
      payload.size() != 5 + uint64_t{count} * 16) {
    return absl::DataLossError("malformed transaction outcomes record");
  }
  for (uint32_t i = 0; i < count; ++i) {
    TxKey k;
    in.Get(&k.transaction);
    in.Get(&k.epoch);
    out->push_back(k);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ReplayResult> ReplayNodeLog(absl::Span<const storage::LogRecordView> records, NodeId self,
                                           ReplayMode mode, alloc::BackupRegions* copies) {
  const bool compact = mode == ReplayMode::kCompact;
  ReplayResult result;
  // Copies reset and not (yet) received whole: the sender and the copy number of each
  // region's last reset.
  struct Reset {
    NodeId primary = 0;
    uint64_t copy = 0;  // 0: a log from before copies were numbered
  };
  absl::flat_hash_map<RegionId, Reset> partial;
  absl::flat_hash_map<RegionId, std::vector<NodeId>> due;  // copies owed, as last logged
  // Pass 1: the fate of every transaction record — the first decision after it. A
  // decision names the id only: it decides the latest undecided record of that id.
  std::vector<Fate> fate(records.size(), Fate::kUndecided);
  absl::flat_hash_map<uint64_t, size_t> undecided;  // transaction id -> its record's index
  absl::flat_hash_map<StreamKey, Stream> streams;
  for (size_t i = 0; i < records.size(); ++i) {
    const storage::LogRecordView& r = records[i];
    const auto type = static_cast<NodeLogType>(r.type);
    if (type == NodeLogType::kTxPrepared || type == NodeLogType::kTxApplied || type == NodeLogType::kTxReplicated) {
      std::optional<TxKey> key = RecordTransaction(r);
      if (!key.has_value()) return Damaged(r, "a transaction record too short to name its transaction");
      undecided[key->transaction] = i;
      result.outcomes[*key] = type == NodeLogType::kTxPrepared ? TxOutcome::kPrepared : TxOutcome::kCommitted;
      if (type == NodeLogType::kTxReplicated) {
        // The header only: pass 2 decodes the record.
        ApplyRequest header;
        if (absl::Status s = DecodeApplyHeader(absl::string_view(r.payload.data(), r.payload.size()), &header);
            !s.ok()) {
          return Damaged(r, s.message());
        }
        Stream& stream = streams[StreamKey{header.sender, header.sender_thread, header.sender_boot}];
        stream.watermark = std::max(stream.watermark, header.watermark);
        stream.records.emplace_back(header.sequence, i);
      }
      continue;
    }
    if (type == NodeLogType::kTxOutcomes) {
      std::vector<TxKey> committed;
      if (absl::Status s = DecodeTxOutcomes(r.payload, &committed); !s.ok()) return Damaged(r, s.message());
      for (const TxKey& k : committed) result.outcomes[k] = TxOutcome::kCommitted;
      if (compact) result.committed_prepared.insert(result.committed_prepared.end(), committed.begin(), committed.end());
      continue;
    }
    if (type != NodeLogType::kTxCommitted && type != NodeLogType::kTxAborted) continue;
    std::optional<uint64_t> id = DecidedTransaction(r);
    if (!id.has_value()) return Damaged(r, "a decision record that is not a transaction id");
    auto it = undecided.find(*id);
    if (it == undecided.end()) continue;  // a decision for a record held elsewhere, or repeated
    const bool commit = type == NodeLogType::kTxCommitted;
    fate[it->second] = commit ? Fate::kCommit : Fate::kAbort;
    const TxKey key = *RecordTransaction(records[it->second]);
    result.outcomes[key] = commit ? TxOutcome::kCommitted : TxOutcome::kAborted;
    if (compact && commit && static_cast<NodeLogType>(records[it->second].type) == NodeLogType::kTxPrepared) {
      result.committed_prepared.push_back(key);
    }
    undecided.erase(it);
  }

  // The records the restart reconciles (ReplayResult::retained): of each sender's latest
  // boot (it reconciled those of earlier boots before it sent a record of this one), the
  // ones no watermark passed, unless aborted here.
  absl::flat_hash_map<NodeId, uint32_t> latest_boot;
  for (const auto& [key, stream] : streams) {
    uint32_t& boot = latest_boot[std::get<0>(key)];
    boot = std::max(boot, std::get<2>(key));
  }
  absl::flat_hash_set<size_t> unsettled;  // indexes of those records
  for (const auto& [key, stream] : streams) {
    if (std::get<2>(key) != latest_boot[std::get<0>(key)]) continue;
    for (const auto& [sequence, i] : stream.records) {
      if (sequence >= stream.watermark && fate[i] != Fate::kAbort) unsettled.insert(i);
    }
  }

  // Pass 2: apply in log order.
  BackupLog applier(copies);
  for (size_t i = 0; i < records.size(); ++i) {
    const storage::LogRecordView& r = records[i];
    ++result.stats.records;
    switch (static_cast<NodeLogType>(r.type)) {
      case NodeLogType::kBoot: {
        WireReader in(r.payload);
        uint8_t format = 0;
        if (!in.Get(&format) || format != kNodeRecordFormat || !in.Get(&result.boot) || !in.done()) {
          return Damaged(r, "malformed start record");
        }
        break;
      }
      case NodeLogType::kMetadata: {
        WireReader in(r.payload);
        uint8_t format = 0;
        uint16_t name_bytes = 0;
        uint32_t value_bytes = 0;
        absl::string_view name, value;
        if (!in.Get(&format) || format != kNodeRecordFormat || !in.Get(&name_bytes) || !in.Bytes(name_bytes, &name) ||
            !in.Get(&value_bytes) || !in.Bytes(value_bytes, &value) || !in.done()) {
          return Damaged(r, "malformed metadata record");
        }
        result.metadata[std::string(name)] = std::string(value);
        break;
      }
      case NodeLogType::kRegionCreated: {
        absl::StatusOr<alloc::RegionCreated> c = alloc::DecodeRegionCreated(r.payload);
        if (!c.ok()) return Damaged(r, c.status().message());
        if (absl::Status s = copies->Create(c->region, c->bytes, c->primary); !s.ok()) {
          return Damaged(r, s.message());
        }
        partial.erase(c->region);
        ++result.stats.regions;
        break;
      }
      case NodeLogType::kRegionReset: {  // a copy received whole starts here (alloc/region_copy.h)
        absl::StatusOr<alloc::RegionCreated> c = alloc::DecodeRegionCreated(r.payload);
        if (!c.ok()) return Damaged(r, c.status().message());
        if (absl::Status s = copies->Reset(c->region, c->bytes, c->primary); !s.ok()) return Damaged(r, s.message());
        partial[c->region] = Reset{c->primary, c->copy};
        due.erase(c->region);  // another node is its primary now
        break;
      }
      case NodeLogType::kRegionCopied: {  // ... and ends here, whole
        absl::StatusOr<alloc::RegionCreated> c = alloc::DecodeRegionCreated(r.payload);
        if (!c.ok()) return Damaged(r, c.status().message());
        // Only the copy the last reset began: a copy whose reset (another sender's, or
        // the same sender's next copy) was logged while this end was being logged stays
        // partial. (Dropped meanwhile, maybe: then nothing to mark.) A record without a
        // number (an older log) goes by the sender alone.
        if (auto it = partial.find(c->region);
            it != partial.end() && it->second.primary == c->primary &&
            (it->second.copy == c->copy || it->second.copy == 0 || c->copy == 0)) {
          partial.erase(it);
        }
        break;
      }
      case NodeLogType::kRegionPromoted: {  // failover made this node the region's primary
        absl::StatusOr<alloc::RegionCreated> c = alloc::DecodeRegionCreated(r.payload);
        if (!c.ok()) return Damaged(r, c.status().message());
        if (absl::Status s = copies->SetPrimary(c->region, c->primary); !s.ok()) return Damaged(r, s.message());
        partial.erase(c->region);  // only a whole copy is promoted
        break;
      }
      case NodeLogType::kRegionDropped: {  // handed over, or out of its replica set
        absl::StatusOr<alloc::RegionCreated> c = alloc::DecodeRegionCreated(r.payload);
        if (!c.ok()) return Damaged(r, c.status().message());
        (void)copies->Drop(c->region);  // a copy may have been dropped already
        partial.erase(c->region);
        due.erase(c->region);
        break;
      }
      case NodeLogType::kRegionCopiesDue: {
        absl::StatusOr<alloc::CopiesDue> d = alloc::DecodeCopiesDue(r.payload);
        if (!d.ok()) return Damaged(r, d.status().message());
        if (d->nodes.empty()) {
          due.erase(d->region);
        } else {
          due[d->region] = std::move(d->nodes);
        }
        break;
      }
      case NodeLogType::kRegionImage: {
        absl::StatusOr<alloc::RegionImage> image = alloc::DecodeRegionImage(r.payload);
        if (!image.ok()) return Damaged(r, "malformed region image record");
        const RegionId region = image->region;
        const uint64_t offset = image->offset;
        const absl::string_view bytes = image->bytes;
        const Region* copy = copies->Find(region);
        if (copy == nullptr || !copy->Contains(offset, bytes.size())) {
          return Damaged(r, absl::StrFormat("an image of region %d at offset %d (%d bytes) outside every region held",
                                            region, offset, bytes.size()));
        }
        std::memcpy(copy->base() + offset, bytes.data(), bytes.size());
        break;
      }
      case NodeLogType::kTxOutcomes:
        break;  // read in pass 1
      case NodeLogType::kCheckpointEnd:
        if (absl::StatusOr<CheckpointEnd> end = DecodeCheckpointEnd(r.payload); !end.ok()) {
          return Damaged(r, end.status().message());
        }
        break;
      case NodeLogType::kBlockWords: {
        absl::StatusOr<alloc::BlockWords> b = alloc::DecodeBlockWords(r.payload);
        if (!b.ok()) return Damaged(r, b.status().message());
        if (absl::Status s = copies->Apply(b->region, b->first_unit, b->words); !s.ok()) {
          return Damaged(r, s.message());
        }
        ++result.stats.block_updates;
        break;
      }
      case NodeLogType::kTxPrepared:
      case NodeLogType::kTxApplied:
      case NodeLogType::kTxReplicated: {
        const bool replicated = static_cast<NodeLogType>(r.type) == NodeLogType::kTxReplicated;
        const bool applied = replicated || static_cast<NodeLogType>(r.type) == NodeLogType::kTxApplied;
        if (compact && !applied && fate[i] == Fate::kUndecided) {  // its decision may come after the prefix
          result.carried.push_back(r);
          break;
        }
        const bool apply = applied ? fate[i] != Fate::kAbort : fate[i] == Fate::kCommit;
        if (!apply && fate[i] != Fate::kUndecided) {
          ++result.stats.transactions_discarded;
          break;
        }
        const std::string_view bytes = TxRecordBytes(r);
        if (unsettled.contains(i)) {
          // Applied here and kept for the restart's reconciliation; a checkpoint carries it
          // on (applied again at its replay: harmless, BackupLog::Apply skips what a copy
          // reflects already).
          if (compact) {
            result.carried.push_back(r);
          } else {
            result.retained.emplace_back(bytes);
          }
        }
        std::vector<NodeId> participants;
        absl::StatusOr<LogRecord> record;
        if (applied) {
          record = DecodeLogRecord(bytes);
        } else {
          absl::StatusOr<PrepareRequest> prepare = DecodePrepare(bytes);
          if (!prepare.ok()) return Damaged(r, prepare.status().message());
          record = std::move(prepare->record);
          participants = std::move(prepare->participants);
        }
        if (!record.ok()) return Damaged(r, record.status().message());
        // This node's own single-machine commit with no decision after it: the primary
        // logs one (commit or abort) before it unlocks the objects; a crash can come
        // first. A backup's kTxApplied is final (nothing follows it).
        const bool own_undecided = applied && !replicated && fate[i] == Fate::kUndecided && !record->entries.empty() &&
                                   copies->CreatorOf(record->entries.front().address.region()) == self;
        if (own_undecided && compact) {  // it may still be aborted after the prefix
          result.carried.push_back(r);
          break;
        }
        if (own_undecided) {
          result.presumed_committed.push_back(record->transaction);
          result.retained.emplace_back(bytes);  // its backups may lack it
        }
        if (!apply) {  // prepared, undecided: in doubt
          InDoubt d;
          d.participants = std::move(participants);
          d.primary.kind = d.backup.kind = LogKind::kLock;
          d.primary.transaction = d.backup.transaction = record->transaction;
          d.primary.epoch = d.backup.epoch = record->epoch;
          for (LogEntry& e : record->entries) {
            const bool own = copies->CreatorOf(e.address.region()) == self;
            (own ? d.primary : d.backup).entries.push_back(std::move(e));
          }
          result.in_doubt.push_back(std::move(d));
          break;
        }
        record->kind = LogKind::kCommit;
        if (absl::StatusOr<size_t> s = applier.Apply(LogRecordView::Of(*record)); !s.ok()) return Damaged(r, s.status().message());
        ++result.stats.transactions_applied;
        break;
      }
      case NodeLogType::kTxCommitted:
      case NodeLogType::kTxAborted:
        break;  // read in pass 1
      default:
        return Damaged(r, "unknown record type");
    }
  }

  for (const auto& [region, reset] : partial) {
    if (copies->Find(region) == nullptr) continue;
    result.partial_copies.push_back(region);
    result.partial_copy_numbers[region] = reset.copy;
  }
  std::sort(result.partial_copies.begin(), result.partial_copies.end());
  for (auto& [region, nodes] : due) {
    if (copies->Find(region) != nullptr && copies->CreatorOf(region) == self) {
      result.copies_due[region] = std::move(nodes);
    }
  }

  // In-doubt objects of this node's own regions stay locked, as the crash left them.
  if (compact) return result;
  for (InDoubt& d : result.in_doubt) {
    for (LogEntry& e : d.primary.entries) {
      const Region* copy = copies->Find(e.address.region());
      if (copy == nullptr || e.address.offset() % kObjectAlignment != 0 ||
          !copy->Contains(e.address.offset(), StoredBytes(e.address.offset(), e.size))) {
        return absl::DataLossError(absl::StrFormat("transaction %x in doubt names %s, outside every region",
                                                   d.primary.transaction, e.address.ToString()));
      }
      char* object = copy->base() + e.address.offset();
      if (e.op == LogOp::kAlloc || e.op == LogOp::kAllocRaw) {
        // The allocator marked the slot allocated when the transaction took it, before
        // its PREPARE; that mark was never logged. Made again, so that the allocator's
        // scan does not hand the slot out while recovery may still commit the object
        // (an abort frees it: ThreadContext::RestoreInDoubt). At the incarnation the
        // entry names: the replayed slot can be behind it by allocations that aborted
        // (their frees are not logged).
        const uint64_t word = LoadHeaderWord(object + kIncarnationOffset);
        StoreHeaderWord(object + kIncarnationOffset,
                        IncarnationWord(IncarnationNamed(IncarnationOf(word), e.incarnation), true));
      }
      const uint64_t version = LoadHeaderWord(object + kVersionOffset);
      if (IsRawHeaderWord(version)) {
        // A one-sided object (a kFreeRaw in doubt): its lock is kRawLocked, and after a
        // restart its data is lost anyway (the adopting allocator marks it so too).
        uint64_t expected = version;
        if ((version & kRawLocked) != 0 ||
            !CasHeaderWord(object + kVersionOffset, expected, version | kRawLost | kRawLocked)) {
          return absl::DataLossError(absl::StrFormat("%s is in doubt in two transactions", e.address.ToString()));
        }
        e.version = version | kRawLost;
        continue;
      }
      if (IsLocked(version) || !LockObject(object, version, kWriteLock)) {
        return absl::DataLossError(absl::StrFormat("%s is in doubt in two transactions", e.address.ToString()));
      }
      e.version = version;
    }
  }
  return result;
}

}  // namespace farm::tx
