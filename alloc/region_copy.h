// SendRegionCopy: the sending side of the region copy protocol (messages.h) — a
// region's primary gives another node a full copy of the region (failover's
// re-replication: a new member of its replica set, or a backup whose copy may have
// diverged). The receiving side is AllocService with a RegionCopyReceiver.
//
//   BEGIN  the receiver holds an empty copy with the sender as its primary (created, or
//          the one it held zeroed) and logs kRegionReset; answered once durable
//   DATA   chunk by chunk, in offset order, the parts of the region that can hold
//          anything (region_ranges.h UsedRanges: the metadata unit and the units of
//          blocks in use, pages never written skipped), all-zero chunks skipped; the
//          receiver writes each into its copy and logs it as a kRegionImage record;
//          answered once written there (once durable when over a few MiB of the copy
//          wait for the receiver's log: copy_receiver.h). At most `window` are
//          unanswered at a time: DATA occupies at most window x chunk bytes of the
//          thread's ring to the receiver
//   END    after every DATA is answered: the bytes sent and their CRC-32C in offset
//          order; the receiver compares them with what it wrote (DataLoss otherwise);
//          answered once every DATA's record is durable
// So once `done` reports OK, the receiver's copy — in memory and as its log replays
// (kRegionReset then the kRegionImage records) — equals the region in its metadata unit
// and in every unit in use, and is zero in the free units (whatever stale bytes they
// hold here: nothing reads a free unit, and a block assigned there anew has its slot
// headers cleared on every copy).
//
// Contract with the caller:
//   - the region is frozen from the call until `done`: no transaction, allocation or
//     block-table change touches it here (nothing checks this: a change during the copy
//     gives a copy that matches no state of the region). Nor may anything use the
//     receiver's copy meanwhile (BEGIN zeroes it);
//   - `region` outlives `done`; nothing reads it after `done`;
//   - the receiver must not be the region's primary (it refuses: FailedPrecondition).
// A failure is the first error (the request's status, prefixed with what failed); the
// receiver's copy is then partial — in memory and in its log — until a copy succeeds.
// Nothing is retried: the caller sends the copy again (BEGIN starts it over).
//
// Threads: SendRegionCopy from any thread; everything else, `done` included, runs on
// `thread`'s loop (never inside the call).
#ifndef FARM_ALLOC_REGION_COPY_H_
#define FARM_ALLOC_REGION_COPY_H_

#include <cstddef>
#include <cstdint>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "farm/base/region.h"
#include "farm/msg/msg_thread.h"

namespace farm::alloc {

struct RegionCopyOptions {
  // DATA bytes per message; lowered to what the ring's payload limit leaves
  // (MsgThread::max_payload_bytes() less the 13-byte header).
  size_t chunk_bytes = 32 << 10;
  // DATA messages sent and not yet answered, at most (>= 1). With the defaults, 128 KiB:
  // half of the default 256 KiB ring.
  int window = 4;
  // Per request, as MsgThread::Call's (zero: the messenger's default).
  absl::Duration timeout = absl::ZeroDuration();
};

struct RegionCopyStats {
  uint64_t scanned_bytes = 0;  // of the region read (the used ranges)
  uint64_t bytes_sent = 0;     // in DATA
  uint64_t chunks = 0;         // DATA messages
  uint64_t zero_chunks = 0;    // chunks of the used ranges skipped as all zero
  uint32_t crc = 0;            // CRC-32C of the bytes sent, in offset order
  double seconds = 0;          // from the start to `done`
};

// `stats` tells how far the copy got, on failure too.
using RegionCopyDone =
    absl::AnyInvocable<void(const absl::Status& status, const RegionCopyStats& stats)>;

// Sends a full copy of `region` (this node's, formatted: region_format.h) to node `to`
// from `thread`. `done` runs exactly once, on `thread`'s loop: OK once the receiver has
// a durable copy that matched at END, or the first error.
void SendRegionCopy(MsgThread& thread, NodeId to, const Region& region, RegionCopyDone done,
                    const RegionCopyOptions& options = {});

}  // namespace farm::alloc

#endif  // FARM_ALLOC_REGION_COPY_H_
