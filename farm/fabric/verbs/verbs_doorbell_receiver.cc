#include "farm/fabric/verbs/verbs_doorbell_receiver.h"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "farm/base/log.h"
#include "farm/fabric/socket_util.h"

namespace farm {

absl::StatusOr<std::unique_ptr<VerbsDoorbellReceiver>> VerbsDoorbellReceiver::Create(
    const VerbsDevice& device, DoorbellTable* doorbells, uint32_t depth) {
  std::unique_ptr<VerbsDoorbellReceiver> r(new VerbsDoorbellReceiver(doorbells, depth));
  r->channel_ = ibv_create_comp_channel(device.context());
  if (r->channel_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_create_comp_channel");
  if (absl::Status s = SetNonBlocking(r->channel_->fd); !s.ok()) return s;
  r->cq_ = ibv_create_cq(device.context(), static_cast<int>(depth), nullptr, r->channel_, 0);
  if (r->cq_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_create_cq (doorbells)");
  ibv_srq_init_attr srq_init{};
  srq_init.attr.max_wr = depth;
  srq_init.attr.max_sge = 1;
  r->srq_ = ibv_create_srq(device.pd(), &srq_init);
  if (r->srq_ == nullptr) return absl::ErrnoToStatus(errno, "ibv_create_srq");
  if (absl::Status s = r->PostReceives(depth); !s.ok()) return s;
  r->stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!r->stop_fd_.valid()) return absl::ErrnoToStatus(errno, "eventfd");
  if (const int rc = ibv_req_notify_cq(r->cq_, 0); rc != 0) {
    return absl::ErrnoToStatus(rc, "ibv_req_notify_cq (doorbells)");
  }
  r->thread_ = std::thread([p = r.get()] { p->Run(); });
  return r;
}

VerbsDoorbellReceiver::~VerbsDoorbellReceiver() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!::write(stop_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  if (srq_ != nullptr) ibv_destroy_srq(srq_);
  if (cq_ != nullptr) ibv_destroy_cq(cq_);
  if (channel_ != nullptr) ibv_destroy_comp_channel(channel_);
}

absl::Status VerbsDoorbellReceiver::PostReceives(uint32_t n) {
  // A wake-up carries no payload (its data is the WRITE's): receives need no buffer.
  ibv_recv_wr wr{};
  wr.num_sge = 0;
  for (uint32_t i = 0; i < n; ++i) {
    ibv_recv_wr* bad = nullptr;
    if (const int rc = ibv_post_srq_recv(srq_, &wr, &bad); rc != 0) {
      return absl::ErrnoToStatus(rc, "ibv_post_srq_recv");
    }
  }
  return absl::OkStatus();
}

void VerbsDoorbellReceiver::Run() {
  Drain();  // anything that arrived before the thread started
  for (;;) {
    pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
      FARM_LOG(kError, "verbs doorbells: poll: %s", std::strerror(errno));
      return;
    }
    if (fds[1].revents != 0) return;
    unsigned events = 0;
    ibv_cq* cq;
    void* context;
    while (ibv_get_cq_event(channel_, &cq, &context) == 0) ++events;
    if (events > 0) ibv_ack_cq_events(cq_, events);
    // Re-arm before draining: a completion after the drain raises a new event.
    (void)ibv_req_notify_cq(cq_, 0);
    Drain();
  }
}

void VerbsDoorbellReceiver::Drain() {
  ibv_wc wcs[32];
  for (;;) {
    const int n = ibv_poll_cq(cq_, 32, wcs);
    if (n <= 0) return;
    for (int i = 0; i < n; ++i) {
      // Every completion here consumed one shared receive: a wake-up, or one flushed
      // when its QP failed. Ring for wake-ups only; replace the receive either way.
      if (wcs[i].status == IBV_WC_SUCCESS && wcs[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        doorbells_->Ring(ntohl(wcs[i].imm_data));
      }
    }
    if (absl::Status s = PostReceives(static_cast<uint32_t>(n)); !s.ok()) {
      FARM_LOG(kError, "verbs doorbells: %s", s.message());
    }
  }
}

}  // namespace farm
