// RingReceiver: the receiving end of one ring (one remote sending thread -> this node),
// paper section 3.1.
//
// Poll looks at the word at the head; a non-zero word starts a record, and a non-zero
// trailer at its end means the whole record has arrived (ring_format.h invariants). A
// record is delivered, zeroed, and the head advances. After half the ring has been
// consumed, the head is written back to the sender's copy (lazily, as in the paper),
// waking the sender's thread. A malformed record stops the ring for good: status()
// says why, and nothing after it is delivered.
//
// Words that are still landing: an RDMA NIC writes each aligned 8-byte word at once,
// but a software NIC need not (Soft-RoCE copies with the CPU, and under emulation a
// word can be seen half-written). So an invalid word 0, or a trailer that is neither
// 0 nor the expected one, counts as still arriving until it has stayed the same for
// kSettleTime; only then is it malformed. Bytes before the last byte of a trailer are
// in place once it is (WRITEs land in increasing address order).
//
// Owning thread only (the thread the ring is assigned to).
#ifndef FARM_MSG_RING_RECEIVER_H_
#define FARM_MSG_RING_RECEIVER_H_

#include <chrono>
#include <chrono>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/ring_format.h"

namespace farm {

struct RingReceiverConfig {
  char* ring = nullptr;  // local memory of ring_bytes
  uint32_t ring_bytes = 0;
  // Where the sender keeps its copy of our head, and its thread's doorbell.
  RegionCapability head_region;
  uint64_t head_offset = 0;
  uint32_t sender_doorbell = kNoDoorbell;
  // A local 8-byte word (registered under head_source_lkey) the head is written from.
  char* head_source = nullptr;
  uint32_t head_source_lkey = 0;
  uint64_t wr_id = 0;  // tags the head WRITEs' completions (only failures are signalled)
};

// Receives the records a ring delivers. `payload` is valid only during the call.
class RecordSink {
 public:
  virtual ~RecordSink() = default;
  virtual void OnRecord(const ring::Header& header, absl::string_view payload) = 0;
};

class RingReceiver {
 public:
  explicit RingReceiver(const RingReceiverConfig& config) : config_(config) {}

  // Delivers up to `budget` complete records to `sink`. Returns the number of records
  // consumed, pads included.
  int Poll(int budget, RecordSink& sink);

  // Writes the head back to the sender once half the ring has been consumed since the
  // last time. `back` is the endpoint to the sender's node, looked up after Poll (a
  // handler may have replaced it); null while not connected, and the sender waits.
  void MaybeReturnSpace(Endpoint* back);

  const absl::Status& status() const { return status_; }
  uint64_t delivered() const { return delivered_; }

  static constexpr std::chrono::milliseconds kSettleTime{200};

 private:
  // True while the unexpected `word` seen at `pos` may still be landing (see above).
  bool MaySettle(size_t pos, uint64_t word);

  const RingReceiverConfig config_;
  uint64_t head_ = 0;      // bytes consumed (monotonic)
  uint64_t sequence_ = 0;  // message records consumed
  uint64_t unreported_ = 0;
  uint64_t delivered_ = 0;
  absl::Status status_;
  // The unexpected word being watched, where, and since when.
  size_t unsettled_pos_ = SIZE_MAX;
  uint64_t unsettled_word_ = 0;
  std::chrono::steady_clock::time_point unsettled_since_{};
};

}  // namespace farm

#endif  // FARM_MSG_RING_RECEIVER_H_
