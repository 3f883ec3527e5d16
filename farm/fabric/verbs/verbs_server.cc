#include "farm/fabric/verbs/verbs_server.h"

#include <cstring>
#include <memory>

#include "farm/fabric/verbs/verbs_qp.h"

namespace farm {
namespace {

struct ResponderQp {
  ibv_qp* qp = nullptr;
  ~ResponderQp() {
    if (qp != nullptr) ibv_destroy_qp(qp);
  }
};

void AppendFailure(verbs_wire::Kind kind, ByteBuffer& out) {
  verbs_wire::QpFrame reply = verbs_wire::MakeFrame(kind, 0, 0, VerbsPortAddress{});
  reply.status = 1;
  out.Append(&reply, sizeof(reply));
}

}  // namespace

absl::Status VerbsServer::ProcessInput(Conn& conn) {
  using verbs_wire::QpFrame;
  while (conn.in.size() >= sizeof(QpFrame)) {
    QpFrame req;
    std::memcpy(&req, conn.in.data(), sizeof(req));
    conn.in.Consume(sizeof(req));
    auto* responder = static_cast<ResponderQp*>(conn.backend_state.get());
    const bool connect = responder == nullptr;
    const verbs_wire::Kind expected = connect ? verbs_wire::kConnectRequest : verbs_wire::kResetRequest;
    const verbs_wire::Kind reply_kind = connect ? verbs_wire::kConnectReply : verbs_wire::kResetReply;
    if (absl::Status s = verbs_wire::CheckFrame(req, expected); !s.ok()) return s;
    if (connect) {
      auto created = std::make_shared<ResponderQp>();
      absl::StatusOr<ibv_qp*> qp =
          CreateRcQp(*device_, {receiver_->cq(), receiver_->cq(), receiver_->srq(), 1});
      if (!qp.ok()) {
        AppendFailure(reply_kind, conn.out);
        return qp.status();
      }
      created->qp = *qp;
      conn.backend_state = created;
      responder = created.get();
    } else if (absl::Status s = ResetQp(responder->qp); !s.ok()) {
      AppendFailure(reply_kind, conn.out);
      return s;
    }
    const uint32_t psn = RandomPsn();
    if (absl::Status s = ConnectRcQp(responder->qp, *device_, psn, req); !s.ok()) {
      AppendFailure(reply_kind, conn.out);
      return s;
    }
    const QpFrame reply =
        verbs_wire::MakeFrame(reply_kind, responder->qp->qp_num, psn, device_->address());
    conn.out.Append(&reply, sizeof(reply));
  }
  return absl::OkStatus();
}

}  // namespace farm
