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

}  // namespace farm::tx
