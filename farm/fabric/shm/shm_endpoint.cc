#include "farm/fabric/shm/shm_endpoint.h"

#include <sys/epoll.h>
#include <sys/socket.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/cpu_copy.h"
#include "farm/fabric/socket_util.h"
#include "farm/fabric/validate.h"

namespace farm {

using shm_wire::Request;
using shm_wire::RequestFrame;
using shm_wire::ResponseFrame;

absl::StatusOr<std::unique_ptr<ShmEndpoint>> ShmEndpoint::Create(const ShmEndpointConfig& config,
                                                                 UniqueFd control,
                                                                 SocketCompletionQueue* cq,
                                                                 uint64_t context,
                                                                 const PeerFinder& find_peer) {
  std::unique_ptr<ShmEndpoint> ep(new ShmEndpoint(config, std::move(control), cq, context));
  std::vector<UniqueFd> fds;
  absl::StatusOr<ResponseFrame> tables = ep->Call(Request::kGetTables, 0, 0, &fds);
  if (!tables.ok()) return tables.status();
  if (fds.size() != 2) {
    return absl::DataLossError(absl::StrFormat("peer sent %d descriptors for its tables, want 2",
                                               fds.size()));
  }
  const uint32_t region_capacity = tables->value2;
  const uint32_t doorbell_capacity = tables->value3;
  if (region_capacity == 0 || region_capacity > kMaxRegionSlots || doorbell_capacity == 0) {
    return absl::DataLossError("peer sent implausible table capacities");
  }
  absl::StatusOr<Region> region_table =
      Region::Attach(kNullRegion, std::move(fds[0]), region_capacity * sizeof(SharedRegionSlot));
  if (!region_table.ok()) return region_table.status();
  absl::StatusOr<Region> doorbells =
      Region::Attach(kNullRegion, std::move(fds[1]), doorbell_capacity * sizeof(DoorbellSlot));
  if (!doorbells.ok()) return doorbells.status();
  ep->peer_ = find_peer(tables->value, std::move(*region_table), region_capacity,
                        std::move(*doorbells), doorbell_capacity);
  if (absl::Status s = cq->Watch(ep->control_.get(), ep.get(), /*want_write=*/false); !s.ok()) return s;
  return ep;
}

ShmEndpoint::~ShmEndpoint() { cq_->Unwatch(control_.get()); }

absl::StatusOr<ResponseFrame> ShmEndpoint::Call(Request type, uint32_t arg32, uint64_t arg64,
                                                std::vector<UniqueFd>* fds) {
  const absl::Time deadline = absl::Now() + config_.control_timeout;
  RequestFrame req{static_cast<uint32_t>(type), arg32, arg64, 0};
  if (absl::Status s = SendAll(control_.get(), &req, sizeof(req), deadline); !s.ok()) return s;
  ResponseFrame resp;
  if (absl::Status s = RecvWithFds(control_.get(), &resp, sizeof(resp), fds, deadline); !s.ok()) {
    return s;
  }
  if (resp.type != req.type) {
    return absl::DataLossError(
        absl::StrFormat("shm control: response type %u to request %u", resp.type, req.type));
  }
  if (resp.status != 0) {
    return absl::Status(static_cast<absl::StatusCode>(resp.status), "refused by the region owner");
  }
  return resp;
}

void ShmEndpoint::Fail(absl::Status why) {
  if (!status_.ok()) return;
  status_ = std::move(why);
  Completion c;
  c.wr_id = context_;
  c.opcode = Opcode::kDisconnect;
  c.status = CompletionStatus::kTransportError;
  cq_->PushDisconnect(c);
}

void ShmEndpoint::OnSocketReady(uint32_t events) {
  // The owner never sends unsolicited bytes; readable here means hang-up or garbage.
  char probe;
  const ssize_t rc = ::recv(control_.get(), &probe, 1, MSG_DONTWAIT | MSG_PEEK);
  if (rc == 0 || (events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP)) != 0) {
    Fail(absl::UnavailableError("shm peer closed its control connection (process gone?)"));
  } else if (rc > 0) {
    Fail(absl::DataLossError("shm peer sent unsolicited bytes on its control connection"));
  }
}

const ShmEndpoint::Mapping* ShmEndpoint::FindOrMap(const RegionCapability& cap) {
  if (auto it = mappings_.find(cap.rkey); it != mappings_.end()) return &it->second;
  const Region* region = peer_->FindRegion(cap.rkey);
  if (region == nullptr) {
    std::vector<UniqueFd> fds;
    absl::StatusOr<ResponseFrame> resp = Call(Request::kMapRegion, cap.region, cap.rkey, &fds);
    if (!resp.ok()) {
      if (absl::IsUnavailable(resp.status()) || absl::IsDeadlineExceeded(resp.status()) ||
          absl::IsDataLoss(resp.status())) {
        Fail(resp.status());
      }
      return nullptr;
    }
    if (fds.size() != 1) {
      Fail(absl::DataLossError("shm peer sent no descriptor for a region"));
      return nullptr;
    }
    absl::StatusOr<Region> mapped = Region::Attach(cap.region, std::move(fds[0]), resp->value);
    if (!mapped.ok()) return nullptr;
    region = peer_->AddRegion(cap.rkey, std::move(*mapped));
  }
  return &mappings_.emplace(cap.rkey, Mapping{region->base(), region->size()}).first->second;
}

int ShmEndpoint::DoorbellFd(uint32_t id) {
  if (auto it = doorbell_fds_.find(id); it != doorbell_fds_.end()) return it->second;
  if (id >= peer_->doorbell_capacity()) return -1;
  int fd = peer_->FindDoorbellFd(id);
  if (fd < 0) {
    std::vector<UniqueFd> fds;
    absl::StatusOr<ResponseFrame> resp = Call(Request::kGetDoorbell, id, 0, &fds);
    if (!resp.ok() || fds.size() != 1) return -1;
    fd = peer_->AddDoorbellFd(id, std::move(fds[0]));
  }
  doorbell_fds_.emplace(id, fd);  // the peer keeps the descriptor open while we live
  return fd;
}

ShmEndpoint::Target ShmEndpoint::Resolve(const WorkRequest& wr) {
  if (!config_.local_regions->CheckLocal(wr.lkey, wr.local, wr.length)) {
    return {CompletionStatus::kLocalProtectionError};
  }
  const RegionCapability& cap = *wr.remote;
  const Mapping* mapping;
  if (cap.rkey == last_rkey_ && last_rkey_ != 0) {
    mapping = &last_mapping_;
  } else {
    mapping = FindOrMap(cap);
    if (mapping == nullptr) {
      return {status_.ok() ? CompletionStatus::kRemoteAccessError : CompletionStatus::kFlushed};
    }
    last_rkey_ = cap.rkey;
    last_mapping_ = *mapping;
  }
  // Checked on every op against the owner's live table: a deregistered region fails.
  const uint64_t size = std::min(peer_->ValidateRkey(cap.region, cap.rkey), mapping->size);
  if (wr.remote_offset > size || wr.length > size - wr.remote_offset) {
    return {CompletionStatus::kRemoteAccessError};
  }
  return {CompletionStatus::kSuccess, mapping->base + wr.remote_offset};
}

void ShmEndpoint::Perform(const WorkRequest& wr, const Target& target) {
  Completion c;
  c.wr_id = wr.wr_id;
  c.opcode = wr.opcode;
  c.status = target.status;
  if (target.status == CompletionStatus::kSuccess) {
    switch (wr.opcode) {
      case Opcode::kRead:
        c.torn = ReadWithTornCheck(wr.local, target.at, wr.length);
        break;
      case Opcode::kWrite:
        OrderedStoreCopy(target.at, wr.local, wr.length);
        if (wr.notify != kNoDoorbell) {
          if (const int fd = DoorbellFd(wr.notify); fd >= 0) peer_->RingDoorbell(wr.notify, fd);
        }
        break;
      case Opcode::kCompareSwap: {
        const uint64_t old = AtomicCompareSwap(target.at, wr.compare_add, wr.swap);
        std::memcpy(wr.local, &old, 8);
        break;
      }
      case Opcode::kFetchAdd: {
        const uint64_t old = AtomicFetchAdd(target.at, wr.compare_add);
        std::memcpy(wr.local, &old, 8);
        break;
      }
      case Opcode::kDisconnect:
        c.status = CompletionStatus::kRemoteInvalidRequest;
        break;
    }
  }
  c.byte_len = c.status == CompletionStatus::kSuccess ? wr.length : 0;
  cq_->Complete(wr.signaled || c.status != CompletionStatus::kSuccess ? &c : nullptr);
}

absl::Status ShmEndpoint::Admit(const WorkRequest& wr) {
  if (!status_.ok()) {
    return absl::FailedPreconditionError(absl::StrCat("endpoint failed: ", status_.message()));
  }
  if (absl::Status s = ValidateWorkRequest(wr, config_.max_op_bytes); !s.ok()) return s;
  if (!cq_->Claim()) {
    return absl::ResourceExhaustedError("completion queue full: poll it before posting more");
  }
  return absl::OkStatus();
}

absl::Status ShmEndpoint::Post(const WorkRequest& wr) {
  if (absl::Status s = Admit(wr); !s.ok()) return s;
  Perform(wr, Resolve(wr));
  return absl::OkStatus();
}

absl::Status ShmEndpoint::PostBatch(absl::Span<const WorkRequest> wrs, size_t* posted) {
  // Resolve a chunk and prefetch its targets, then execute it: the copies' cache misses
  // overlap instead of following one another, as a NIC pipelines a chain of requests.
  constexpr size_t kChunk = 32;
  Target targets[kChunk];
  *posted = 0;
  while (*posted < wrs.size()) {
    const absl::Span<const WorkRequest> chunk = wrs.subspan(*posted, kChunk);
    absl::Status stop;
    size_t ready = 0;
    for (; ready < chunk.size(); ++ready) {
      if (stop = Admit(chunk[ready]); !stop.ok()) break;
      targets[ready] = Resolve(chunk[ready]);
      if (targets[ready].at == nullptr) continue;
      if (chunk[ready].opcode == Opcode::kRead) {
        __builtin_prefetch(targets[ready].at, 0);
      } else {
        __builtin_prefetch(targets[ready].at, 1);
      }
    }
    for (size_t i = 0; i < ready; ++i) Perform(chunk[i], targets[i]);
    *posted += ready;
    if (!stop.ok()) return stop;
  }
  return absl::OkStatus();
}

}  // namespace farm
