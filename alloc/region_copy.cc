#include "alloc/region_copy.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "alloc/copy_messages.h"
#include "alloc/durable_records.h"
#include "alloc/messages.h"
#include "alloc/region_ranges.h"
#include "farm/base/crc32c.h"

namespace farm::alloc {
namespace {

bool AllZero(const char* p, size_t n) {
  return n == 0 || (p[0] == 0 && std::memcmp(p, p + 1, n - 1) == 0);
}

// One copy in progress; kept alive by the continuations of its requests.
class Sender : public std::enable_shared_from_this<Sender> {
 public:
  Sender(MsgThread& thread, NodeId to, const Region& region, RegionCopyDone done,
         const RegionCopyOptions& options)
      : thread_(thread), to_(to), region_(region), done_(std::move(done)), options_(options) {}

  void Start() {
    const size_t limit = thread_.max_payload_bytes();
    chunk_bytes_ = std::min(options_.chunk_bytes,
                            limit > kRegionImageHeaderBytes ? limit - kRegionImageHeaderBytes : 0);
    if (chunk_bytes_ == 0 || options_.window < 1) {
      return Finish(absl::InvalidArgumentError(absl::StrFormat(
          "chunks of %d bytes (%d fit a message), a window of %d", options_.chunk_bytes,
          limit - std::min(limit, kRegionImageHeaderBytes), options_.window)));
    }
    absl::StatusOr<std::vector<ByteRange>> ranges = UsedRanges(region_);
    if (!ranges.ok()) return Finish(ranges.status());
    ranges_ = std::move(*ranges);
    if (!ranges_.empty()) at_ = ranges_.front().begin;
    (void)Request(kRegionCopyBeginMsgId, EncodeCopyBegin({region_.id(), region_.size()}), "begin",
                  [](Sender& self) { self.Pump(); });
  }

 private:
  // Sends `payload` as `id`; `next` when it is answered OK, Finish with the error
  // (prefixed with `what`) otherwise.
  template <typename Next>
  absl::Status Request(MsgId id, std::string payload, std::string what, Next next) {
    absl::Status sent = thread_.Call(
        to_, id, payload,
        [self = shared_from_this(), what, next = std::move(next)](const absl::Status& s,
                                                                  absl::string_view reply) mutable {
          absl::Status answer = s;
          if (answer.ok() &&
              (reply.size() != 1 || static_cast<uint8_t>(reply[0]) != kAllocWireFormat)) {
            answer = absl::InternalError("malformed answer");
          }
          if (!answer.ok()) return self->Finish(answer, what);
          next(*self);
        },
        options_.timeout);
    if (!sent.ok()) Finish(sent, what);
    return sent;
  }

  // The next chunk of the used ranges that holds a non-zero byte; false at the end.
  bool NextChunk(uint64_t* offset, uint64_t* bytes) {
    while (range_ < ranges_.size()) {
      const ByteRange& r = ranges_[range_];
      if (at_ >= r.end) {
        if (++range_ < ranges_.size()) at_ = ranges_[range_].begin;
        continue;
      }
      const uint64_t n = std::min<uint64_t>(chunk_bytes_, r.end - at_);
      const uint64_t from = at_;
      at_ += n;
      stats_.scanned_bytes += n;
      if (AllZero(region_.base() + from, n)) {
        ++stats_.zero_chunks;
        continue;
      }
      *offset = from;
      *bytes = n;
      return true;
    }
    return false;
  }

  // Keeps `window` DATA requests outstanding; END once all are answered.
  void Pump() {
    uint64_t offset = 0, n = 0;
    while (!finished_ && outstanding_ < options_.window && NextChunk(&offset, &n)) {
      const absl::string_view bytes(region_.base() + offset, n);
      ++outstanding_;
      absl::Status sent =
          Request(kRegionCopyDataMsgId, EncodeRegionImage(region_.id(), offset, bytes),
                  absl::StrCat("data at offset ", offset), [](Sender& self) {
                    --self.outstanding_;
                    self.Pump();
                  });
      if (!sent.ok()) return;
      stats_.bytes_sent += n;
      ++stats_.chunks;
      stats_.crc = Crc32cExtend(stats_.crc, bytes);
    }
    if (finished_ || outstanding_ > 0 || range_ < ranges_.size()) return;
    (void)Request(kRegionCopyEndMsgId, EncodeCopyEnd({region_.id(), stats_.bytes_sent, stats_.crc}),
                  "end", [](Sender& self) { self.Finish(absl::OkStatus()); });
  }

  void Finish(const absl::Status& status, absl::string_view what = "") {
    if (finished_) return;
    finished_ = true;
    stats_.seconds = absl::ToDoubleSeconds(absl::Now() - began_);
    absl::Status reported = status;
    if (!status.ok()) {
      reported = absl::Status(
          status.code(), absl::StrFormat("copying region %d to node %d%s%s: %s", region_.id(), to_,
                                         what.empty() ? "" : ", ", what, status.message()));
    }
    RegionCopyDone done = std::move(done_);
    done(reported, stats_);
  }

  MsgThread& thread_;
  const NodeId to_;
  const Region& region_;
  RegionCopyDone done_;
  const RegionCopyOptions options_;
  const absl::Time began_ = absl::Now();
  size_t chunk_bytes_ = 0;
  std::vector<ByteRange> ranges_;
  size_t range_ = 0;  // the range `at_` is in
  uint64_t at_ = 0;   // the next byte to look at
  int outstanding_ = 0;
  bool finished_ = false;
  RegionCopyStats stats_;
};

}  // namespace

void SendRegionCopy(MsgThread& thread, NodeId to, const Region& region, RegionCopyDone done,
                    const RegionCopyOptions& options) {
  auto sender = std::make_shared<Sender>(thread, to, region, std::move(done), options);
  thread.loop().Post([sender = std::move(sender)] { sender->Start(); });
}

}  // namespace farm::alloc
