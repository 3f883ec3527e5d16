#include "tx/tx_messages.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/wire.h"

namespace farm::tx {

std::string EncodeDecision(const TxDecision& d) {
  std::string out(16, '\0');
  out[0] = static_cast<char>(kTxDecisionFormat);
  out[1] = static_cast<char>(d.decision);
  StoreLe<uint64_t>(out.data() + 8, d.transaction);
  return out;
}

absl::StatusOr<TxDecision> DecodeDecision(absl::string_view in) {
  if (in.size() != 16) {
    return absl::InvalidArgumentError(absl::StrFormat("a decision is 16 bytes, not %d", in.size()));
  }
  if (static_cast<uint8_t>(in[0]) != kTxDecisionFormat) {
    return absl::InvalidArgumentError(absl::StrFormat("decision format %d", static_cast<uint8_t>(in[0])));
  }
  const auto d = static_cast<uint8_t>(in[1]);
  if (d < static_cast<uint8_t>(Decision::kCommitBackup) || d > static_cast<uint8_t>(Decision::kAbort)) {
    return absl::InvalidArgumentError(absl::StrFormat("unknown decision %d", d));
  }
  TxDecision out;
  out.decision = static_cast<Decision>(d);
  out.transaction = LoadLe<uint64_t>(in.data() + 8);
  return out;
}

absl::Status EncodePrepare(const LogRecord& record, const std::vector<NodeId>& participants, std::string* out) {
  if (absl::Status s = EncodeLogRecord(record, out); !s.ok()) return s;
  if (participants.size() > 0xFFFF) return absl::InvalidArgumentError("more than 65535 participants");
  WireWriter w(out);
  w.Put(kTxDecisionFormat).Put(static_cast<uint16_t>(participants.size()));
  for (NodeId n : participants) w.Put(static_cast<uint32_t>(n));
  return absl::OkStatus();
}

absl::StatusOr<PrepareRequest> DecodePrepare(std::string_view in) {
  size_t used = 0;
  absl::StatusOr<LogRecord> record = DecodeLogRecord(in, &used);
  if (!record.ok()) return record.status();
  WireReader r(absl::string_view(in.data() + used, in.size() - used));
  uint8_t format = 0;
  uint16_t count = 0;
  if (!r.Get(&format) || format != kTxDecisionFormat || !r.Get(&count) ||
      r.left() != size_t{count} * sizeof(uint32_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed participants after a prepare's lock record (%d bytes)",
                                                      in.size() - used));
  }
  PrepareRequest out;
  out.record = std::move(*record);
  out.participants.resize(count);
  for (NodeId& n : out.participants) {
    uint32_t v = 0;
    r.Get(&v);
    n = v;
  }
  return out;
}

std::string EncodeOutcomeQuery(const std::vector<TxKey>& transactions) {
  WireWriter w;
  w.Put(kTxDecisionFormat).Put(static_cast<uint32_t>(transactions.size()));
  for (const TxKey& t : transactions) w.Put(t.transaction).Put(t.epoch);
  return w.Take();
}

absl::StatusOr<std::vector<TxKey>> DecodeOutcomeQuery(absl::string_view in) {
  WireReader r(in);
  uint8_t format = 0;
  uint32_t count = 0;
  if (!r.Get(&format) || format != kTxDecisionFormat || !r.Get(&count) || count > kMaxOutcomeQuery ||
      r.left() != uint64_t{count} * 2 * sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed outcome query (%d bytes)", in.size()));
  }
  std::vector<TxKey> out(count);
  for (TxKey& t : out) {
    r.Get(&t.transaction);
    r.Get(&t.epoch);
  }
  return out;
}

std::string EncodeVoteQuery(uint64_t epoch, const std::vector<TxKey>& transactions) {
  return WireWriter().Put(epoch).Take() + EncodeOutcomeQuery(transactions);
}

absl::StatusOr<VoteQuery> DecodeVoteQuery(absl::string_view in) {
  if (in.size() < sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed vote query (%d bytes)", in.size()));
  }
  VoteQuery out;
  out.epoch = LoadLe<uint64_t>(in.data());
  absl::StatusOr<std::vector<TxKey>> keys = DecodeOutcomeQuery(in.substr(sizeof(uint64_t)));
  if (!keys.ok()) return keys.status();
  out.transactions = std::move(*keys);
  return out;
}

std::string EncodeOutcomes(const std::vector<TxOutcome>& outcomes) {
  WireWriter w;
  w.Put(kTxDecisionFormat).Put(static_cast<uint32_t>(outcomes.size()));
  for (TxOutcome o : outcomes) w.Put(o);
  return w.Take();
}

absl::StatusOr<std::vector<TxOutcome>> DecodeOutcomes(absl::string_view in, size_t expected) {
  WireReader r(in);
  uint8_t format = 0;
  uint32_t count = 0;
  if (!r.Get(&format) || format != kTxDecisionFormat || !r.Get(&count) || count != expected ||
      r.left() != count) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed outcome answer (%d bytes)", in.size()));
  }
  std::vector<TxOutcome> out(count);
  for (TxOutcome& o : out) {
    uint8_t v = 0;
    r.Get(&v);
    if (v > static_cast<uint8_t>(TxOutcome::kAborted)) {
      return absl::InvalidArgumentError(absl::StrFormat("unknown transaction outcome %d", v));
    }
    o = static_cast<TxOutcome>(v);
  }
  return out;
}

absl::Status EncodeApplyRequest(const ApplyRequest& header, const LogRecord& record, uint64_t epoch,
                                std::string* out) {
  WireWriter w(out);
  w.Put(kTxApplyFormat)
      .Put(uint8_t{0})
      .Put(header.sender_thread)
      .Put(static_cast<uint32_t>(header.sender))
      .Put(header.sender_boot)
      .Put(uint32_t{0})
      .Put(header.sequence)
      .Put(header.watermark);
  return EncodeLogRecordAs(record, LogKind::kCommit, epoch, out);
}

absl::Status DecodeApplyHeader(absl::string_view in, ApplyRequest* header) {
  if (in.size() < kApplyHeaderBytes || static_cast<uint8_t>(in[0]) != kTxApplyFormat) {
    return absl::InvalidArgumentError(
        absl::StrFormat("malformed commit record request (%d bytes, format %d)", in.size(),
                        in.empty() ? 0 : static_cast<uint8_t>(in[0])));
  }
  header->sender_thread = LoadLe<uint16_t>(in.data() + 2);
  header->sender = LoadLe<uint32_t>(in.data() + 4);
  header->sender_boot = LoadLe<uint32_t>(in.data() + 8);
  header->sequence = LoadLe<uint64_t>(in.data() + 16);
  header->watermark = LoadLe<uint64_t>(in.data() + 24);
  return absl::OkStatus();
}

absl::Status DecodeApplyRequest(absl::string_view in, ApplyRequest* header, LogRecordView* record,
                                absl::string_view* record_bytes) {
  if (absl::Status s = DecodeApplyHeader(in, header); !s.ok()) return s;
  const absl::string_view bytes = in.substr(kApplyHeaderBytes);
  size_t used = 0;
  if (absl::Status s = DecodeLogRecordView(std::string_view(bytes.data(), bytes.size()), record, &used); !s.ok()) {
    return s;
  }
  if (used != bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d bytes after the commit record of a request", bytes.size() - used));
  }
  if (record->kind != LogKind::kCommit) return absl::InvalidArgumentError("a backup applies a commit record");
  if (record_bytes != nullptr) *record_bytes = bytes;
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeRetainedQuery(const RetainedQuery& query) {
  if (query.regions.size() > kMaxRetainedRegions) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d regions in one retained-records query (at most %d)", query.regions.size(),
                        kMaxRetainedRegions));
  }
  WireWriter w;
  w.Put(kTxApplyFormat).Put(static_cast<uint16_t>(query.regions.size())).Put(query.first).Put(query.epoch);
  for (RegionId r : query.regions) w.Put(static_cast<uint32_t>(r));
  return w.Take();
}

absl::StatusOr<RetainedQuery> DecodeRetainedQuery(absl::string_view in) {
  WireReader r(in);
  uint8_t format = 0;
  uint16_t count = 0;
  RetainedQuery out;
  if (!r.Get(&format) || format != kTxApplyFormat || !r.Get(&count) || count > kMaxRetainedRegions ||
      !r.Get(&out.first) || !r.Get(&out.epoch) || r.left() != size_t{count} * sizeof(uint32_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed retained-records query (%d bytes)", in.size()));
  }
  out.regions.resize(count);
  for (RegionId& region : out.regions) {
    uint32_t v = 0;
    r.Get(&v);
    region = v;
  }
  return out;
}

namespace {

// `count` commit records back to back (EncodeLogRecord) filling `in`, into `out`.
absl::Status DecodeCommitRecords(absl::string_view in, uint16_t count, absl::string_view what,
                                 std::vector<LogRecord>* out) {
  out->reserve(count);
  for (uint16_t i = 0; i < count; ++i) {
    size_t used = 0;
    absl::StatusOr<LogRecord> record = DecodeLogRecord(std::string_view(in.data(), in.size()), &used);
    if (!record.ok()) return record.status();
    if (record->kind != LogKind::kCommit) {
      return absl::InvalidArgumentError(absl::StrCat(what, " holds a record that is not a commit"));
    }
    out->push_back(std::move(*record));
    in.remove_prefix(used);
  }
  if (!in.empty()) return absl::InvalidArgumentError(absl::StrFormat("%d bytes after %s's records", in.size(), what));
  return absl::OkStatus();
}

}  // namespace

std::string EncodeRetainedPage(uint32_t total, uint16_t count, absl::string_view records) {
  WireWriter w;
  w.Put(kTxApplyFormat).Put(total).Put(count).Bytes(records);
  return w.Take();
}

absl::StatusOr<RetainedPage> DecodeRetainedPage(absl::string_view in) {
  WireReader r(in);
  uint8_t format = 0;
  uint16_t count = 0;
  RetainedPage out;
  if (!r.Get(&format) || format != kTxApplyFormat || !r.Get(&out.total) || !r.Get(&count) || count > out.total) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed retained-records page (%d bytes)", in.size()));
  }
  constexpr size_t kHeader = 1 + sizeof(uint32_t) + sizeof(uint16_t);
  if (absl::Status s = DecodeCommitRecords(in.substr(kHeader), count, "a retained-records page", &out.records);
      !s.ok()) {
    return s;
  }
  return out;
}

absl::StatusOr<std::string> EncodeReconcile(const std::vector<RegionId>& regions, uint16_t count,
                                            absl::string_view records) {
  if (regions.size() > kMaxRetainedRegions) {
    return absl::InvalidArgumentError(absl::StrFormat("%d regions in one reconcile request (at most %d)",
                                                      regions.size(), kMaxRetainedRegions));
  }
  WireWriter w;
  w.Put(kTxApplyFormat).Put(static_cast<uint16_t>(regions.size())).Put(count);
  for (RegionId r : regions) w.Put(static_cast<uint32_t>(r));
  w.Bytes(records);
  return w.Take();
}

absl::StatusOr<ReconcileRequest> DecodeReconcile(absl::string_view in) {
  WireReader r(in);
  uint8_t format = 0;
  uint16_t regions = 0, count = 0;
  if (!r.Get(&format) || format != kTxApplyFormat || !r.Get(&regions) || regions > kMaxRetainedRegions ||
      !r.Get(&count) || r.left() < size_t{regions} * sizeof(uint32_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed reconcile request (%d bytes)", in.size()));
  }
  ReconcileRequest out;
  out.regions.resize(regions);
  for (RegionId& region : out.regions) {
    uint32_t v = 0;
    r.Get(&v);
    region = v;
  }
  if (absl::Status s =
          DecodeCommitRecords(in.substr(in.size() - r.left()), count, "a reconcile request", &out.records);
      !s.ok()) {
    return s;
  }
  return out;
}

}  // namespace farm::tx
