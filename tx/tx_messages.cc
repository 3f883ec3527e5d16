#include "tx/tx_messages.h"

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

std::string EncodeOutcomeQuery(const std::vector<uint64_t>& transactions) {
  WireWriter w;
  w.Put(kTxDecisionFormat).Put(static_cast<uint32_t>(transactions.size()));
  for (uint64_t t : transactions) w.Put(t);
  return w.Take();
}

absl::StatusOr<std::vector<uint64_t>> DecodeOutcomeQuery(absl::string_view in) {
  WireReader r(in);
  uint8_t format = 0;
  uint32_t count = 0;
  if (!r.Get(&format) || format != kTxDecisionFormat || !r.Get(&count) || count > kMaxOutcomeQuery ||
      r.left() != uint64_t{count} * sizeof(uint64_t)) {
    return absl::InvalidArgumentError(absl::StrFormat("malformed outcome query (%d bytes)", in.size()));
  }
  std::vector<uint64_t> out(count);
  for (uint64_t& t : out) r.Get(&t);
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

}  // namespace farm::tx
