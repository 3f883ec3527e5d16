#include "farm/msg/ring_sender.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "farm/base/cpu_copy.h"

namespace farm {

absl::Status RingSender::Send(ring::Header header, absl::string_view payload) {
  const CopyOf copy{payload};
  return Send(header, PayloadBuilder{payload.size(), copy});
}

absl::Status RingSender::Send(ring::Header header, const PayloadBuilder& payload) {
  const size_t record = ring::RecordBytes(payload.bytes);
  if (record > ring::MaxRecordBytes(config_.ring_bytes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "message of %u bytes exceeds the limit of %u for rings of %u bytes", payload.bytes,
        max_payload_bytes(), config_.ring_bytes));
  }
  header.kind = ring::Kind::kMessage;
  header.size = static_cast<uint32_t>(record);
  header.pad = static_cast<uint8_t>(record - ring::kOverheadBytes - payload.bytes);
  const char* written = nullptr;
  if (backlog_.empty()) {
    absl::StatusOr<Outcome> outcome = TryWrite(header, payload, &written);
    if (!outcome.ok()) return outcome.status();
    if (*outcome == Outcome::kSent) return absl::OkStatus();
  }
  if (backlog_bytes_ + payload.bytes > config_.max_backlog_bytes) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "ring to the peer is full and %u bytes already wait to be sent: the receiver is not "
        "consuming", backlog_bytes_));
  }
  ++stats_.waits;
  Queued& q = backlog_.emplace_back(Queued{header, std::string()});
  if (written != nullptr) {
    q.payload.assign(written, payload.bytes);
  } else {
    q.payload.resize(payload.bytes);
    payload.write(q.payload.data());
  }
  backlog_bytes_ += payload.bytes;
  return absl::OkStatus();
}

absl::StatusOr<int> RingSender::Flush() {
  int sent = 0;
  while (!backlog_.empty()) {
    const Queued& q = backlog_.front();
    const char* written = nullptr;
    const CopyOf copy{q.payload};
    absl::StatusOr<Outcome> outcome = TryWrite(q.header, PayloadBuilder{q.payload.size(), copy}, &written);
    if (!outcome.ok()) return outcome.status();
    if (*outcome == Outcome::kNoRoom) break;
    backlog_bytes_ -= q.payload.size();
    backlog_.pop_front();
    ++sent;
  }
  return sent;
}

absl::Status RingSender::Notify() {
  if (!notify_pending_) return absl::OkStatus();
  WorkRequest wr;
  wr.wr_id = config_.wr_id;
  wr.opcode = Opcode::kWrite;
  wr.signaled = false;
  wr.notify = config_.receiver_doorbell;
  wr.local = config_.staging;
  wr.length = 0;
  wr.lkey = config_.staging_lkey;
  wr.remote = &config_.ring;
  wr.remote_offset = config_.ring_offset;
  absl::Status status = config_.endpoint->Post(wr);
  if (status.ok()) notify_pending_ = false;  // else retried next time (queue full)
  return absl::IsResourceExhausted(status) ? absl::OkStatus() : status;
}

absl::Status RingSender::PostWrite(uint64_t pos, uint32_t bytes) {
  WorkRequest wr;
  wr.wr_id = config_.wr_id;
  wr.opcode = Opcode::kWrite;
  wr.signaled = false;
  wr.local = config_.staging + pos;
  wr.length = bytes;
  wr.lkey = config_.staging_lkey;
  wr.remote = &config_.ring;
  wr.remote_offset = config_.ring_offset + pos;
  return config_.endpoint->Post(wr);
}

absl::StatusOr<RingSender::Outcome> RingSender::TryWrite(const ring::Header& header,
                                                         const PayloadBuilder& payload,
                                                         const char** written) {
  const uint64_t ring_bytes = config_.ring_bytes;
  const uint64_t head = LoadWordAcquire(config_.head_copy);
  const uint64_t free = ring_bytes - (tail_ - head);
  uint64_t pos = tail_ % ring_bytes;
  const uint64_t contiguous = ring_bytes - pos;
  const bool wrap = header.size > contiguous;
  if ((wrap ? contiguous + header.size : header.size) > free) return Outcome::kNoRoom;

  auto fail = [](const absl::Status& s) -> absl::StatusOr<Outcome> {
    if (absl::IsResourceExhausted(s)) return Outcome::kNoRoom;  // send queue full: retry later
    return absl::UnavailableError(absl::StrCat("cannot send to peer: ", s.message()));
  };
  if (wrap) {
    // Invariant 1: a pad record covers the rest of the ring; the record starts at 0.
    const uint64_t pad = ring::PadWord(static_cast<uint32_t>(contiguous));
    std::memcpy(config_.staging + pos, &pad, 8);
    if (absl::Status s = PostWrite(pos, 8); !s.ok()) return fail(s);
    tail_ += contiguous;
    pos = 0;
  }
  char* record = config_.staging + pos;
  ring::Header h = header;
  uint64_t words[3];
  ring::EncodeHeader(h, words);
  std::memcpy(record, words, sizeof(words));
  payload.write(record + ring::kHeaderBytes);
  *written = record + ring::kHeaderBytes;
  std::memset(record + ring::kHeaderBytes + payload.bytes, 0, h.pad);
  const uint64_t trailer = ring::Trailer(sequence_);
  std::memcpy(record + h.size - ring::kTrailerBytes, &trailer, 8);
  if (config_.trailer_apart) {
    // A retry after a full send queue writes the body again: the same bytes, unseen
    // by the receiver until the trailer lands.
    const uint32_t body = h.size - ring::kTrailerBytes;
    if (absl::Status s = PostWrite(pos, body); !s.ok()) return fail(s);
    if (absl::Status s = PostWrite(pos + body, ring::kTrailerBytes); !s.ok()) return fail(s);
  } else if (absl::Status s = PostWrite(pos, h.size); !s.ok()) {
    return fail(s);
  }
  notify_pending_ = true;
  tail_ += h.size;
  ++sequence_;
  ++stats_.records;
  stats_.bytes += h.size;
  return Outcome::kSent;
}

}  // namespace farm
