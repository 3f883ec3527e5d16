#include "farm/fabric/tcp/tcp_responder.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/base/cpu_copy.h"
#include "farm/fabric/tcp/tcp_wire.h"
#include "farm/fabric/validate.h"

namespace farm {

using tcp_wire::OpRequest;
using tcp_wire::OpResponse;

absl::Status TcpResponder::ProcessInput(Conn& conn) {
  while (conn.in.size() >= sizeof(OpRequest) && conn.out.size() < kMaxPendingOutput) {
    OpRequest req;
    std::memcpy(&req, conn.in.data(), sizeof(req));
    const auto opcode = static_cast<Opcode>(req.opcode);
    if (req.kind != tcp_wire::kOpRequest) {
      return absl::DataLossError(absl::StrFormat("bad frame kind 0x%02x", req.kind));
    }
    if (opcode != Opcode::kRead && opcode != Opcode::kWrite && !IsAtomic(opcode)) {
      return absl::DataLossError(absl::StrFormat("bad opcode %u", req.opcode));
    }
    const bool is_write = opcode == Opcode::kWrite;
    if ((opcode == Opcode::kRead || is_write) && req.length > max_op_bytes_) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s of %u bytes exceeds %u", OpcodeName(opcode), req.length,
                          max_op_bytes_));
    }
    const size_t frame = sizeof(req) + (is_write ? req.length : 0);
    if (conn.in.size() < frame) break;  // wait for the rest of the WRITE's data

    OpResponse resp{};
    resp.kind = tcp_wire::kOpResponse;
    resp.opcode = req.opcode;
    resp.status = static_cast<uint8_t>(CompletionStatus::kSuccess);
    char* target = nullptr;
    if (IsAtomic(opcode) && (req.length != 8 || req.offset % 8 != 0)) {
      resp.status = static_cast<uint8_t>(CompletionStatus::kRemoteInvalidRequest);
    } else if ((req.length == 0 && !(is_write && req.notify != kNoDoorbell)) ||
               (target = regions_->Resolve(req.region, req.rkey, req.offset, req.length)) ==
                   nullptr) {
      resp.status = static_cast<uint8_t>(CompletionStatus::kRemoteAccessError);
    }
    const bool ok = resp.status == static_cast<uint8_t>(CompletionStatus::kSuccess);
    if (ok && opcode == Opcode::kRead) {
      resp.length = req.length;
      char* out = conn.out.Reserve(sizeof(resp) + req.length);
      resp.torn = ReadWithTornCheck(out + sizeof(resp), target, req.length) ? 1 : 0;
      std::memcpy(out, &resp, sizeof(resp));
      conn.out.Commit(sizeof(resp) + req.length);
    } else {
      if (ok && is_write) {
        OrderedStoreCopy(target, conn.in.data() + sizeof(req), req.length);
        if (req.notify != kNoDoorbell) doorbells_->Ring(req.notify);
      } else if (ok && opcode == Opcode::kCompareSwap) {
        resp.atomic_result = AtomicCompareSwap(target, req.compare_add, req.swap);
      } else if (ok && opcode == Opcode::kFetchAdd) {
        resp.atomic_result = AtomicFetchAdd(target, req.compare_add);
      }
      conn.out.Append(&resp, sizeof(resp));
    }
    conn.in.Consume(frame);
  }
  return absl::OkStatus();
}

}  // namespace farm
