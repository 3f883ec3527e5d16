// Object codec: between an application's plain object buffer and the object's stored
// bytes (layout in object_layout.h), the writer protocol on the primary, and the rule a
// lock-free reader applies to a copy (DESIGN.md "Objects and versions").
//
// Versions. The header's version word is pin << 63 | count << 2 | lock mode; a line
// version is the low 16 bits of the whole word. An object not write-locked has every line version
// equal to LineVersion(header version without its lock bits).
//
// Lock modes (paper section 3.4, "two locking modes"): kSharedLock keeps other writers
// out but lets lock-free readers accept the object (its bytes are the committed ones);
// kWriteLock (exclusive) refuses them. A primary takes kSharedLock while a transaction
// prepares and upgrades to kWriteLock just before writing. kPinned is a read pin: an
// object a committing transaction read but does not write, held unchanged until that
// transaction applies (other writers are excluded; lock-free readers and validation
// accept it, since it will not change). Only the header word carries a pin.
//
// Writer protocol (the primary, in place), each step's stores visible before the next:
//   1. lock: CAS the version v -> v | kWriteLock, or v | kSharedLock and later store
//      v | kWriteLock (the upgrade; only the holder does it);
//   2. mark every line version LineVersion(v | kWriteLock);
//   3. write the payload;
//   4. publish: every line version LineVersion(v'), then the header version v' =
//      NextVersion(v) (unlocked). Abandon instead restores v and its line versions.
// A reader's copy is accepted (CheckCopy) only when its header is not write-locked, allocated,
// of the expected incarnation, and every line version equals LineVersion(header
// version without lock bits); on CPU-executed transports the copy must also not be torn (the header word
// changed while copying, Completion::torn). Why this suffices: a copy that overlaps a
// write either saw the header after step 1 (locked: refused), or saw it before step 1
// and then, per hardware line (atomic on RDMA), a line written in step 2–4 (its version
// differs: refused) or, on CPU transports, a header that changed before the copy ended
// (torn: refused). 16-bit line versions repeat after 2^14 writes: a reader must refuse
// copies that took longer than that many writes could (the transaction layer bounds
// read time, paper section 3.5).
//
// Everything writes shared memory with atomic stores (other processes and NICs read it
// concurrently), in increasing address order within each step.
#ifndef FARM_BASE_OBJECT_CODEC_H_
#define FARM_BASE_OBJECT_CODEC_H_

#include <cstdint>
#include <span>

#include "farm/base/object_layout.h"

namespace farm {

inline constexpr uint64_t kLockMask = 3;
inline constexpr uint64_t kWriteLock = 1;   // exclusive: lock-free readers retry
inline constexpr uint64_t kSharedLock = 2;  // other writers excluded, readers accept
// Read pin: writers excluded, readers and validation accept. The top bit, not a lock
// mode: both lock bits set is the one-sided objects' tag (object_layout.h), and a count
// that advances by 4 per write never reaches bit 63.
inline constexpr uint64_t kPinned = uint64_t{1} << 63;

// Locked or pinned (another transaction's LOCK fails).
constexpr bool IsLocked(uint64_t version) { return (version & (kLockMask | kPinned)) != 0; }
// Locked against lock-free readers too.
constexpr bool IsWriteLocked(uint64_t version) { return (version & kWriteLock) != 0; }
constexpr bool IsPinned(uint64_t version) { return (version & kPinned) != 0; }
// The version without its lock mode and pin.
constexpr uint64_t Unlocked(uint64_t version) { return version & ~(kLockMask | kPinned); }
constexpr uint64_t NextVersion(uint64_t version) { return Unlocked(version) + 4; }
constexpr uint16_t LineVersion(uint64_t version) { return static_cast<uint16_t>(version); }

// --- Private images (a copy in the reader's buffer, or one being prepared) ---

// Copies the payload out of `image`, the stored bytes of an object that starts at
// region offset `offset` (the image's byte 0 is the header).
void ReadPayload(const char* image, uint64_t offset, std::span<char> payload);

enum class CopyCheck {
  kAccepted,
  kLocked,         // a writer holds the object exclusively
  kInconsistent,   // line versions disagree with the header, or the copy was torn
  kNotAllocated,   // freed (or never allocated)
  kWrongIncarnation,
  kOneSided,       // a one-sided object (object_layout.h): not for transactions or
                   // lock-free reads; never retried
};
const char* CopyCheckName(CopyCheck check);

// The lock-free read rule for a copy of StoredBytes(offset, payload) bytes. An accepted
// copy's version is Unlocked(header version). The copy of a one-sided object (raw header
// word, object_layout.h) of the expected incarnation is kOneSided, whatever it holds.
CopyCheck CheckCopy(const char* image, uint64_t offset, uint64_t payload,
                    uint32_t expected_incarnation, bool torn);

// --- Shared memory (the object in place, on its primary) ---

// Step 1: true when the version was `expected` (unlocked) and is now locked in `mode`
// (kWriteLock or kSharedLock).
bool LockObject(char* object, uint64_t expected, uint64_t mode = kWriteLock);
// Pins an unlocked object at `version`: true when the version was `version` and is now
// version | kPinned. UnpinObject (the pin's holder) stores `version` again.
bool PinObject(char* object, uint64_t version);
void UnpinObject(char* object, uint64_t version);
// The holder of a lock taken from `locked_from` makes it exclusive (a no-op if it is).
void UpgradeLock(char* object, uint64_t locked_from);
// Steps 2–4 for an object locked (either mode) from version `locked_from`: makes the
// lock exclusive, writes `payload` (exactly the object's size) and publishes
// NextVersion(locked_from).
void WriteLockedObject(char* object, uint64_t offset, uint64_t locked_from,
                       std::span<const char> payload);
// Releases a lock without writing (an aborted commit): version `locked_from` again.
void UnlockObject(char* object, uint64_t offset, uint64_t payload, uint64_t locked_from);
// Sets every line version of an object (step 2 or 4 alone).
void StoreLineVersions(char* object, uint64_t offset, uint64_t payload, uint16_t line_version);

// Makes the allocated object at `object` (the holder of its lock, or a copy nobody
// uses) a live one-sided object of `size` zero bytes whose incarnation's low 32 bits are
// `incarnation`: zeroes the payload, then publishes the raw header word (release).
void WriteRawObject(char* object, uint32_t size, uint32_t incarnation);

}  // namespace farm

#endif  // FARM_BASE_OBJECT_CODEC_H_
