// RingSender: the sending end of one ring (this thread -> one remote node), paper
// section 3.1.
//
// It writes each record with one fabric WRITE at its tail and never writes past its
// copy of the receiver's head, which the receiver updates lazily by WRITE. Records that
// do not fit wait in a backlog, in order, and go out as space is returned (Flush); the
// backlog is bounded, so a receiver that stops consuming makes Send fail rather than
// memory grow without end. Nothing is ever overwritten.
//
// Owning thread only.
#ifndef FARM_MSG_RING_SENDER_H_
#define FARM_MSG_RING_SENDER_H_

#include <cstdint>
#include <deque>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/message.h"
#include "farm/msg/ring_format.h"

namespace farm {

struct RingSenderConfig {
  Endpoint* endpoint = nullptr;
  RegionCapability ring;  // the receiver's ring region
  uint64_t ring_offset = 0;
  uint32_t ring_bytes = 0;
  char* staging = nullptr;  // local mirror of ring_bytes, registered under staging_lkey
  uint32_t staging_lkey = 0;
  const char* head_copy = nullptr;  // 8-byte word the receiver writes its head into
  uint32_t receiver_doorbell = kNoDoorbell;
  size_t max_backlog_bytes = 8u << 20;
  uint64_t wr_id = 0;  // tags the WRITEs' completions (only failures are signalled)
  // The fabric's WRITEs may land in any byte order (Fabric::WritesLandInAddressOrder is
  // false): each record goes as two WRITEs, the trailer last, so that a receiver that
  // sees the trailer sees the whole record.
  bool trailer_apart = false;
};

struct RingSenderStats {
  uint64_t records = 0;
  uint64_t bytes = 0;
  uint64_t waits = 0;  // sends that found no room and were queued
};

class RingSender {
 public:
  explicit RingSender(const RingSenderConfig& config) : config_(config) {}

  // Sends a message (header fields other than size/pad/kind are the caller's) or queues
  // it behind earlier ones. Errors: InvalidArgument when the record exceeds a quarter of
  // the ring; ResourceExhausted when the backlog is full (nothing was queued);
  // Unavailable when the endpoint has failed.
  absl::Status Send(ring::Header header, absl::string_view payload);
  // The same, with the payload written in place (message.h): into the ring's staging
  // buffer when it fits now, else into the backlog's copy; payload.write runs at most once.
  absl::Status Send(ring::Header header, const PayloadBuilder& payload);

  // Sends queued records that now fit. Returns how many went out; an error when the
  // endpoint failed.
  absl::StatusOr<int> Flush();

  // Records go out without waking the receiver; this rings its doorbell once for all
  // written since the last call (one fence per batch instead of one per message). The
  // owner calls it before it could go idle. A no-op when nothing was written.
  absl::Status Notify();
  bool notify_pending() const { return notify_pending_; }

  bool has_backlog() const { return !backlog_.empty(); }
  size_t max_payload_bytes() const {
    return ring::MaxRecordBytes(config_.ring_bytes) - ring::kOverheadBytes;
  }
  const RingSenderStats& stats() const { return stats_; }

 private:
  enum class Outcome { kSent, kNoRoom };
  struct Queued {
    ring::Header header;
    std::string payload;
  };

  // Writes the record at the tail and posts it. kNoRoom with *written set: the payload
  // was written to the staging buffer at *written but could not be posted (a full send
  // queue), so the caller keeps those bytes rather than building them again.
  absl::StatusOr<Outcome> TryWrite(const ring::Header& header, const PayloadBuilder& payload,
                                   const char** written);
  absl::Status PostWrite(uint64_t pos, uint32_t bytes);

  const RingSenderConfig config_;
  bool notify_pending_ = false;
  uint64_t tail_ = 0;      // bytes ever written (monotonic)
  uint64_t sequence_ = 0;  // message records ever written
  std::deque<Queued> backlog_;
  size_t backlog_bytes_ = 0;
  RingSenderStats stats_;
};

}  // namespace farm

#endif  // FARM_MSG_RING_SENDER_H_
