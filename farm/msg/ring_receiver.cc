#include "farm/msg/ring_receiver.h"

#include <cstring>

#include "absl/strings/str_format.h"
#include "farm/base/cpu_copy.h"

namespace farm {

bool RingReceiver::MaySettle(size_t pos, uint64_t word) {
  const auto now = std::chrono::steady_clock::now();
  if (pos != unsettled_pos_ || word != unsettled_word_) {
    unsettled_pos_ = pos;
    unsettled_word_ = word;
    unsettled_since_ = now;
    return true;
  }
  return now - unsettled_since_ < kSettleTime;
}

int RingReceiver::Poll(int budget, RecordSink& sink) {
  int consumed = 0;
  while (status_.ok() && consumed < budget) {
    const size_t pos = head_ % config_.ring_bytes;
    char* at = config_.ring + pos;
    const uint64_t word0 = LoadWordAcquire(at);
    if (word0 == 0) break;
    absl::StatusOr<ring::Header> header = ring::DecodeWord0(word0, pos, config_.ring_bytes);
    if (!header.ok()) {
      if (!MaySettle(pos, word0)) status_ = header.status();
      break;
    }
    if (header->kind == ring::Kind::kPad) {
      ZeroShared(at, 8);  // only word 0 of a pad is ever written
    } else {
      const uint64_t trailer = LoadWordAcquire(at + header->size - ring::kTrailerBytes);
      if (trailer == 0) break;  // still arriving
      if (trailer != ring::Trailer(sequence_)) {
        if (!MaySettle(pos + header->size - ring::kTrailerBytes, trailer)) {
          status_ = absl::DataLossError(absl::StrFormat(
              "ring record at %u: trailer %x, want sequence %u", pos, trailer, sequence_));
        }
        break;
      }
      ring::DecodeRest(LoadWordAcquire(at + 8), LoadWordAcquire(at + 16), *header);
      // Invariant 2: the trailer was loaded with acquire, so the payload is complete.
      sink.OnRecord(*header,
                    absl::string_view(at + ring::kHeaderBytes, header->payload_bytes()));
      ZeroShared(at, header->size);
      ++sequence_;
      ++delivered_;
    }
    head_ += header->size;
    unreported_ += header->size;
    ++consumed;
  }
  return consumed;
}

void RingReceiver::MaybeReturnSpace(Endpoint* back) {
  if (unreported_ < config_.ring_bytes / 2 || back == nullptr) return;
  // Invariant 3: the zeroes of every consumed record are visible before the sender can
  // see the head that frees their space (one fence per half ring, not per record).
  PublishZeroes();
  StoreWordRelease(config_.head_source, head_);
  WorkRequest wr;
  wr.wr_id = config_.wr_id;
  wr.opcode = Opcode::kWrite;
  wr.signaled = false;
  wr.notify = config_.sender_doorbell;
  wr.local = config_.head_source;
  wr.length = 8;
  wr.lkey = config_.head_source_lkey;
  wr.remote = &config_.head_region;
  wr.remote_offset = config_.head_offset;
  if (back->Post(wr).ok()) unreported_ = 0;  // else retried on the next Poll
}

}  // namespace farm
