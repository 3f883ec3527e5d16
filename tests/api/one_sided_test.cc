// The raw facet of the public API (farm/api/one_sided.h) on in-process 3-node clusters,
// on every test fabric: round trips of rawRead/rawWrite at many offsets and sizes,
// local and remote; bounds and alignment errors that change nothing; CAS and FETCH_ADD
// returning the old value; FETCH_ADD from every node's threads at once counting exactly
// (each old value seen once); a CAS spin lock from every node never letting two holders
// in nor losing an increment; the separation of one-sided and transactional objects both
// ways; ops through a pointer to a freed (and reused) object; the holder's worker threads
// running nothing for remote ops. When things fail: one_sided_recovery_test.cc.
#include "farm/api/one_sided.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "alloc/size_classes.h"
#include "farm/api/coro.h"
#include "farm/api/farm.h"
#include "farm/api/sync.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/api/one_sided_test_util.h"
#include "tests/support/fabric_test_util.h"
#include "tests/support/node_cluster.h"

namespace farm {
namespace {

using ::testing::HasSubstr;
using testing::NodeCluster;
using one_sided_test::Detached;
using one_sided_test::RunInContext;
using one_sided_test::RunTask;
using testing::Scaled;

uint64_t Word(const std::string& bytes, size_t at = 0) {
  uint64_t w;
  std::memcpy(&w, bytes.data() + at, sizeof(w));
  return w;
}
std::string Bytes(uint64_t w) { return std::string(reinterpret_cast<const char*>(&w), sizeof(w)); }

// --- The README's example (README.md, "One-sided objects") ---

// Nessie's PUT in small: an entry (a sequence number, then the value) written with
// rawWrite, then published by a CAS of an index word; and its GET. README.md shows
// these two functions as they are here.
Task<absl::Status> PublishValue(Context& ctx, RawPtr index, RawPtr data, uint64_t slot, std::string value) {
  absl::StatusOr<uint64_t> seq = co_await RawFetchAdd64(ctx, index, 8, 1);
  if (!seq.ok()) co_return seq.status();
  std::string entry = Bytes(*seq + 1) + value;  // a sequence number, then the bytes
  if (absl::Status s = co_await RawWrite(ctx, data, static_cast<uint32_t>(slot * 64), entry); !s.ok()) co_return s;
  absl::StatusOr<uint64_t> old = co_await RawCas64(ctx, index, 0, 0, slot + 1);  // publish
  if (!old.ok()) co_return old.status();
  if (*old != 0) co_return absl::AlreadyExistsError("published by another writer");
  co_return absl::OkStatus();
}

Task<absl::StatusOr<std::string>> LookupValue(Context& ctx, RawPtr index, RawPtr data, uint32_t value_bytes) {
  absl::StatusOr<RawCopy> word = co_await RawRead(ctx, index, 0, 8);  // one aligned word: atomic
  if (!word.ok()) co_return word.status();
  const uint64_t slot = Word(word->data);
  if (slot == 0) co_return absl::NotFoundError("nothing published");
  absl::StatusOr<RawCopy> entry = co_await RawRead(ctx, data, static_cast<uint32_t>((slot - 1) * 64), 8 + value_bytes);
  if (!entry.ok()) co_return entry.status();
  co_return entry->data.substr(8);  // a real table checks a checksum or key here
}

class OneSidedTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<NodeCluster>> c = NodeCluster::Start(GetParam(), 3, "onesided");
    ASSERT_TRUE(c.ok()) << c.status();
    cluster_ = std::move(*c);
  }
  void TearDown() override { cluster_.reset(); }

  node::Node& node(NodeId id) { return cluster_->node(id); }

  RawPtr Alloc(NodeId on, uint32_t size, Addr hint = Addr(), size_t t = 0) {
    absl::StatusOr<RawPtr> p = RunTask<absl::StatusOr<RawPtr>>(
        node(on), [size, hint](Context& ctx) -> Task<absl::StatusOr<RawPtr>> { return AllocTask(ctx, size, hint); },
        t);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : RawPtr{};
  }
  static Task<absl::StatusOr<RawPtr>> AllocTask(Context& ctx, uint32_t size, Addr hint) {
    co_return co_await RawAlloc(ctx, size, hint);
  }

  absl::StatusOr<std::string> Read(NodeId from, RawPtr p, uint32_t offset, uint32_t length, size_t t = 0) {
    return RunInContext<absl::StatusOr<std::string>>(
        node(from),
        [=](Context& ctx, auto finish) {
          rawRead(ctx, p, offset, length, [finish](absl::StatusOr<RawBytes> r) mutable {
            if (!r.ok()) return finish(r.status());
            finish(std::string(r->data.data(), r->data.size()));
          });
        },
        t);
  }
  // The whole object, in pieces of at most 256 KiB.
  absl::StatusOr<std::string> ReadAll(NodeId from, RawPtr p) {
    std::string all;
    for (uint32_t at = 0; at < p.size;) {
      const uint32_t n = std::min<uint32_t>(p.size - at, 256u << 10);
      absl::StatusOr<std::string> part = Read(from, p, at, n);
      if (!part.ok()) return part.status();
      all += *part;
      at += n;
    }
    return all;
  }
  absl::Status Write(NodeId from, RawPtr p, uint32_t offset, std::string bytes, size_t t = 0) {
    return RunInContext<absl::Status>(
        node(from),
        [=](Context& ctx, auto finish) {
          rawWrite(ctx, p, offset, std::span<const char>(bytes.data(), bytes.size()),
                   [finish](absl::Status s) mutable { finish(s); });
        },
        t);
  }
  absl::StatusOr<uint64_t> Cas(NodeId from, RawPtr p, uint32_t offset, uint64_t expected, uint64_t desired) {
    return RunInContext<absl::StatusOr<uint64_t>>(node(from), [=](Context& ctx, auto finish) {
      rawCas64(ctx, p, offset, expected, desired, [finish](absl::StatusOr<uint64_t> r) mutable { finish(r); });
    });
  }
  absl::StatusOr<uint64_t> FetchAdd(NodeId from, RawPtr p, uint32_t offset, uint64_t delta) {
    return RunInContext<absl::StatusOr<uint64_t>>(node(from), [=](Context& ctx, auto finish) {
      rawFetchAdd64(ctx, p, offset, delta, [finish](absl::StatusOr<uint64_t> r) mutable { finish(r); });
    });
  }
  absl::Status Free(NodeId from, RawPtr p) {
    return RunInContext<absl::Status>(node(from), [=](Context& ctx, auto finish) {
      rawFree(ctx, p, [finish](absl::Status s) mutable { finish(s); });
    });
  }
  RawStats Stats(NodeId on, size_t t = 0) {
    return *RunInContext<absl::StatusOr<RawStats>>(
        node(on), [](Context& ctx, auto finish) { finish(rawStats(ctx)); }, t);
  }

  // A transactional object of `size` bytes holding `fill`, allocated on `on`.
  FatPtr TxObjectOn(NodeId on, uint32_t size, char fill) {
    absl::StatusOr<FatPtr> p = RunInContext<absl::StatusOr<FatPtr>>(node(on), [=](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      txAlloc(*tx, size, Addr(), [tx, fill, finish](absl::StatusOr<ObjBuf*> o) mutable {
        if (!o.ok()) return finish(o.status());
        std::fill((*o)->data().begin(), (*o)->data().end(), fill);
        const FatPtr p = (*o)->ptr();
        txCommit(*tx, [tx, p, finish](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(p);
        });
      });
    });
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : FatPtr{};
  }
  absl::StatusOr<std::string> TxReadOn(NodeId from, FatPtr p) {
    return RunInContext<absl::StatusOr<std::string>>(node(from), [=](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      txRead(*tx, p, [tx, finish](absl::StatusOr<ObjBuf*> o) mutable {
        if (!o.ok()) return finish(o.status());
        std::string bytes((*o)->data().data(), (*o)->data().size());
        txCommit(*tx, [tx, bytes, finish](absl::Status s) mutable {
          if (!s.ok()) return finish(s);
          finish(bytes);
        });
      });
    });
  }
  absl::StatusOr<std::string> LockFreeReadOn(NodeId from, FatPtr p) {
    return RunInContext<absl::StatusOr<std::string>>(node(from), [=](Context& ctx, auto finish) {
      auto op = std::make_shared<LockFreeOp>(lockFreeStart(ctx));
      lockFreeRead(*op, p, [op, finish](absl::StatusOr<LockFreeObject> r) mutable {
        lockFreeEnd(*op);
        if (!r.ok()) return finish(r.status());
        finish(std::string(r->data.data(), r->data.size()));
      });
    });
  }
  absl::Status TxFreeOn(NodeId from, FatPtr p) {
    return RunInContext<absl::Status>(node(from), [=](Context& ctx, auto finish) {
      TxHandle tx = txCreate(ctx);
      if (absl::Status s = txFree(*tx, p); !s.ok()) return finish(s);
      txCommit(*tx, [tx, finish](absl::Status s) mutable { finish(s); });
    });
  }

  std::unique_ptr<NodeCluster> cluster_;
};

std::string Pattern(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (char& c : s) {
    x = x * 1103515245u + 12345u;
    c = static_cast<char>(x >> 16);
  }
  return s;
}

TEST_P(OneSidedTest, WritesAndReadsRoundTripAtManyOffsetsAndSizesLocalAndRemote) {
  const uint32_t largest = static_cast<uint32_t>(alloc::MaxPayloadBytes());
  for (uint32_t size : {8u, 24u, 64u, 100u, 4096u, 4100u, 65536u, largest}) {
    SCOPED_TRACE(absl::StrCat("size ", size));
    const RawPtr p = Alloc(1, size);
    ASSERT_FALSE(p.is_null());
    ASSERT_EQ(p.size, size);
    std::string model(size, '\0');
    absl::StatusOr<std::string> fresh = ReadAll(2, p);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    EXPECT_EQ(*fresh, model) << "a new one-sided object is zero";
    struct Range {
      uint32_t offset, length;
    };
    std::vector<Range> ranges = {{0, 1}, {0, 8}, {1, 7}, {size - 1, 1}, {size / 2, size - size / 2}, {0, size}};
    if (size >= 72) ranges.insert(ranges.end(), {{7, 9}, {60, 8}, {63, 2}, {56, 16}});
    if (size >= 4100) ranges.insert(ranges.end(), {{4090, 10}, {100, 4000}, {size - 4097, 4097}});
    for (size_t i = 0; i < ranges.size(); ++i) {
      const Range r = ranges[i];
      ASSERT_LE(uint64_t{r.offset} + r.length, size);
      const std::string bytes = Pattern(r.length, static_cast<uint32_t>(i + size));
      const NodeId writer = static_cast<NodeId>(1 + i % 3);
      ASSERT_TRUE(Write(writer, p, r.offset, bytes).ok()) << "range " << i;
      model.replace(r.offset, r.length, bytes);
      for (NodeId reader : {1u, 2u, 3u}) {
        absl::StatusOr<std::string> back = Read(reader, p, r.offset, r.length);
        ASSERT_TRUE(back.ok()) << back.status();
        ASSERT_EQ(*back, bytes) << "range " << i << " written by " << writer << ", read by " << reader;
      }
    }
    absl::StatusOr<std::string> all = ReadAll(3, p);
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_TRUE(*all == model) << "the whole object after every write";
  }
  const RawStats local = Stats(1);
  const RawStats remote = Stats(2);
  EXPECT_GT(local.local, 0u);
  EXPECT_EQ(local.remote, 0u) << "node 1 holds every object: its ops ran here";
  EXPECT_EQ(remote.local, 0u);
  EXPECT_GT(remote.remote, 0u);
  EXPECT_GT(remote.bytes_read, 0u);
  EXPECT_GT(remote.bytes_written, 0u);
}

TEST_P(OneSidedTest, BadRangesAlignmentAndPointersAreInvalidArgumentAndChangeNothing) {
  const RawPtr p = Alloc(1, 64);
  ASSERT_FALSE(p.is_null());
  for (NodeId from : {1u, 2u}) {  // local and remote
    SCOPED_TRACE(absl::StrCat("from node ", from));
    absl::StatusOr<std::string> past = Read(from, p, 60, 8);
    EXPECT_EQ(past.status().code(), absl::StatusCode::kInvalidArgument) << past.status();
    EXPECT_THAT(std::string(past.status().message()), HasSubstr("[60, 68)"));
    EXPECT_EQ(Read(from, p, 0, 0).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Read(from, p, 64, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Read(from, p, 0xFFFFFFF0u, 0x20).status().code(), absl::StatusCode::kInvalidArgument)
        << "offset + length overflows 32 bits";
    EXPECT_EQ(Write(from, p, 57, std::string(8, 'x')).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Write(from, p, 0, std::string(65, 'x')).code(), absl::StatusCode::kInvalidArgument);
    absl::StatusOr<uint64_t> misaligned = Cas(from, p, 4, 0, 1);
    EXPECT_EQ(misaligned.status().code(), absl::StatusCode::kInvalidArgument) << misaligned.status();
    EXPECT_THAT(std::string(misaligned.status().message()), HasSubstr("8-byte-aligned"));
    EXPECT_EQ(Cas(from, p, 64, 0, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(FetchAdd(from, p, 12, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(FetchAdd(from, p, 60, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Read(from, RawPtr{}, 0, 8).status().code(), absl::StatusCode::kInvalidArgument);
    // A pointer whose size was changed: the header says how large the object is.
    const RawPtr larger{p.addr, p.size + 64, p.incarnation};
    absl::Status forged = Write(from, larger, 64, std::string(8, 'x'));
    EXPECT_EQ(forged.code(), absl::StatusCode::kInvalidArgument) << forged;
    EXPECT_THAT(std::string(forged.message()), HasSubstr("does not describe"));
    // An address inside the object, not at its start: no object header there (its
    // zero bytes read as a free slot).
    const RawPtr inside{Addr(p.addr.region(), p.addr.offset() + 16), 32, p.incarnation};
    EXPECT_EQ(Write(from, inside, 0, std::string(8, 'x')).code(), absl::StatusCode::kFailedPrecondition);
    const RawPtr unaligned{Addr(p.addr.region(), p.addr.offset() + 8), 32, p.incarnation};
    EXPECT_EQ(Write(from, unaligned, 0, std::string(8, 'x')).code(), absl::StatusCode::kInvalidArgument);
  }
  absl::StatusOr<std::string> all = ReadAll(3, p);
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(*all, std::string(64, '\0')) << "no refused op wrote anything";
  EXPECT_GT(Stats(1).failed, 0u);
  // The last word is reachable by the atomics.
  EXPECT_EQ(*Cas(2, p, 56, 0, 9), 0u);
  EXPECT_EQ(*FetchAdd(1, p, 56, 1), 9u);
  EXPECT_EQ(Word(*Read(3, p, 56, 8)), 10u);
}

TEST_P(OneSidedTest, CompareSwapAndFetchAddReturnTheOldValue) {
  const RawPtr p = Alloc(2, 32);
  ASSERT_FALSE(p.is_null());
  for (NodeId from : {1u, 2u}) {  // remote, then local
    SCOPED_TRACE(absl::StrCat("from node ", from));
    ASSERT_TRUE(Write(3, p, 0, std::string(32, '\0')).ok());
    EXPECT_EQ(*Cas(from, p, 0, 0, 5), 0u) << "success: returns the expected value";
    EXPECT_EQ(Word(*Read(3, p, 0, 8)), 5u);
    EXPECT_EQ(*Cas(from, p, 0, 0, 7), 5u) << "failure: returns the value found";
    EXPECT_EQ(Word(*Read(3, p, 0, 8)), 5u) << "a failed CAS changes nothing";
    EXPECT_EQ(*Cas(from, p, 0, 5, ~uint64_t{0}), 5u);
    EXPECT_EQ(Word(*Read(3, p, 0, 8)), ~uint64_t{0});
    EXPECT_EQ(*FetchAdd(from, p, 0, 2), ~uint64_t{0});
    EXPECT_EQ(Word(*Read(3, p, 0, 8)), 1u) << "FETCH_ADD wraps";
    EXPECT_EQ(*FetchAdd(from, p, 24, 40), 0u);
    EXPECT_EQ(*FetchAdd(from, p, 24, ~uint64_t{0}), 40u) << "adding 2^64 - 1 subtracts one";
    EXPECT_EQ(Word(*Read(1, p, 24, 8)), 39u);
    EXPECT_EQ(*Read(2, p, 8, 16), std::string(16, '\0')) << "the atomics touched their words only";
  }
  const RawStats s = Stats(1);
  EXPECT_GE(s.compare_swaps, 3u);
  EXPECT_GE(s.fetch_adds, 3u);
}

// Keeps `window` FETCH_ADDs of 1 in flight until `count` completed, from one thread.
struct Burst {
  Context* ctx;
  RawPtr counter;
  uint64_t to_issue;
  uint64_t outstanding = 0;
  uint32_t window;
  std::vector<uint64_t> olds;
  absl::Status error;
  Notification* done;
};

void Issue(const std::shared_ptr<Burst>& b) {
  while (b->outstanding < b->window && b->to_issue > 0) {
    --b->to_issue;
    ++b->outstanding;
    rawFetchAdd64(*b->ctx, b->counter, 8, 1, [b](absl::StatusOr<uint64_t> old) {
      --b->outstanding;
      if (old.ok()) {
        b->olds.push_back(*old);
      } else {
        b->error.Update(Detached(old.status()));
      }
      if (b->to_issue > 0) return Issue(b);
      if (b->outstanding == 0) b->done->Notify();
    });
  }
}

TEST_P(OneSidedTest, FetchAddFromEveryNodesThreadsCountsEveryAddExactlyOnce) {
  const RawPtr counter = Alloc(1, 64);
  ASSERT_FALSE(counter.is_null());
  const uint64_t per_thread = Scaled(3000);
  const int rounds = 3;
  uint64_t base = 0;
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::shared_ptr<Burst>> bursts;
    std::vector<std::unique_ptr<Notification>> done;
    for (NodeId n : {1u, 2u, 3u}) {
      for (size_t t = 0; t < 2; ++t) {
        done.push_back(std::make_unique<Notification>());
        auto b = std::make_shared<Burst>();
        b->ctx = &node(n).context(t);
        b->counter = counter;
        b->to_issue = per_thread;
        b->window = 1 + 16 * static_cast<uint32_t>(round + t);  // 1, 17, 33, 49 in flight
        b->done = done.back().get();
        bursts.push_back(b);
        node(n).loop(t).Post([b] { Issue(b); });
      }
    }
    for (auto& d : done) ASSERT_TRUE(d->WaitForNotificationWithTimeout(absl::Seconds(120)));
    std::vector<uint64_t> olds;
    for (auto& b : bursts) {
      ASSERT_TRUE(b->error.ok()) << b->error;
      olds.insert(olds.end(), b->olds.begin(), b->olds.end());
    }
    const uint64_t total = per_thread * bursts.size();
    ASSERT_EQ(olds.size(), total);
    std::sort(olds.begin(), olds.end());
    for (uint64_t i = 0; i < total; ++i) {
      ASSERT_EQ(olds[i], base + i) << "every add saw a distinct old value, none lost (round " << round << ")";
    }
    base += total;
    absl::StatusOr<std::string> now = Read(2, counter, 8, 8);
    ASSERT_TRUE(now.ok()) << now.status();
    EXPECT_EQ(Word(*now), base);
  }
  EXPECT_EQ(Word(*Read(3, counter, 0, 8)), 0u) << "the neighbouring word is untouched";
  EXPECT_EQ(Word(*Read(3, counter, 16, 8)), 0u);
}

// A spin lock on a one-sided word (CAS 0 -> owner id, release CAS owner -> 0) guarding a
// counter incremented by a plain READ and WRITE: mutual exclusion across nodes, and
// each WRITE visible to the next holder.
Task<absl::Status> LockedIncrements(Context& ctx, RawPtr lock, int n, uint64_t me, std::atomic<int>* holders,
                                    std::atomic<int>* max_holders) {
  for (int i = 0; i < n; ++i) {
    for (int spins = 0;; ++spins) {
      absl::StatusOr<uint64_t> old = co_await RawCas64(ctx, lock, 0, 0, me);
      if (!old.ok()) co_return old.status();
      if (*old == 0) break;
      if (spins % 8 == 7) co_await SleepFor(ctx, absl::Microseconds(20));
    }
    const int inside = holders->fetch_add(1) + 1;
    int seen = max_holders->load();
    while (inside > seen && !max_holders->compare_exchange_weak(seen, inside)) {
    }
    absl::StatusOr<RawCopy> count = co_await RawRead(ctx, lock, 8, 8);
    if (!count.ok()) co_return count.status();
    const std::string next = Bytes(Word(count->data) + 1);
    if (absl::Status s = co_await RawWrite(ctx, lock, 8, next); !s.ok()) co_return s;
    holders->fetch_sub(1);
    absl::StatusOr<uint64_t> released = co_await RawCas64(ctx, lock, 0, me, 0);
    if (!released.ok()) co_return released.status();
    if (*released != me) co_return absl::InternalError(absl::StrCat("released a lock held by ", *released));
  }
  co_return absl::OkStatus();
}

TEST_P(OneSidedTest, ACasSpinLockFromEveryNodeNeverLosesAnIncrement) {
  const RawPtr lock = Alloc(3, 64);
  ASSERT_FALSE(lock.is_null());
  const int per_task = static_cast<int>(Scaled(150));
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  struct Run {
    Notification done;
    absl::Status status;
  };
  std::vector<std::unique_ptr<Run>> runs;
  uint64_t id = 0;
  for (NodeId n : {1u, 2u, 3u}) {
    for (size_t t = 0; t < 2; ++t) {
      runs.push_back(std::make_unique<Run>());
      Run* run = runs.back().get();
      Context* ctx = &node(n).context(t);
      const uint64_t me = ++id;
      node(n).loop(t).Post([=, &holders, &max_holders] {
        Spawn(LockedIncrements(*ctx, lock, per_task, me, &holders, &max_holders), [run](absl::Status s) {
          run->status = Detached(s);
          run->done.Notify();
        });
      });
    }
  }
  for (auto& r : runs) {
    ASSERT_TRUE(r->done.WaitForNotificationWithTimeout(absl::Seconds(180)));
    EXPECT_TRUE(r->status.ok()) << r->status;
  }
  EXPECT_EQ(max_holders.load(), 1) << "two holders of the lock at once";
  absl::StatusOr<std::string> end = Read(1, lock, 0, 16);
  ASSERT_TRUE(end.ok()) << end.status();
  EXPECT_EQ(Word(*end, 0), 0u) << "released";
  EXPECT_EQ(Word(*end, 8), static_cast<uint64_t>(per_task) * runs.size()) << "an increment was lost";
}

TEST_P(OneSidedTest, OneSidedOpsOnATransactionalObjectFailAndChangeNothing) {
  const FatPtr t = TxObjectOn(1, 64, 'T');
  ASSERT_FALSE(t.is_null());
  const RawPtr as_raw{t.addr, t.size, t.incarnation};  // forged: no conversion exists
  for (NodeId from : {1u, 2u}) {
    SCOPED_TRACE(absl::StrCat("from node ", from));
    absl::StatusOr<std::string> read = Read(from, as_raw, 0, 8);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << read.status();
    EXPECT_THAT(std::string(read.status().message()), HasSubstr("transactional object"));
    EXPECT_EQ(Write(from, as_raw, 0, std::string(8, 'W')).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Cas(from, as_raw, 0, 0x5454545454545454ull, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(FetchAdd(from, as_raw, 8, 1).status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(Free(from, as_raw).code(), absl::StatusCode::kInvalidArgument);
  }
  // Untouched, and still an ordinary object.
  absl::StatusOr<std::string> lf = LockFreeReadOn(3, t);
  ASSERT_TRUE(lf.ok()) << lf.status();
  EXPECT_EQ(*lf, std::string(64, 'T'));
  absl::StatusOr<std::string> tx = TxReadOn(2, t);
  ASSERT_TRUE(tx.ok()) << tx.status();
  EXPECT_EQ(*tx, std::string(64, 'T'));
  EXPECT_TRUE(TxFreeOn(2, t).ok());
}

TEST_P(OneSidedTest, TransactionsAndLockFreeReadsOfAOneSidedObjectFailAndChangeNothing) {
  const RawPtr r = Alloc(1, 64);
  ASSERT_FALSE(r.is_null());
  const std::string bytes = Pattern(64, 7);
  ASSERT_TRUE(Write(2, r, 0, bytes).ok());
  const FatPtr as_fat{r.addr, r.size, r.incarnation};  // forged: no conversion exists
  for (NodeId from : {1u, 2u}) {
    SCOPED_TRACE(absl::StrCat("from node ", from));
    absl::StatusOr<std::string> tx = TxReadOn(from, as_fat);
    EXPECT_EQ(tx.status().code(), absl::StatusCode::kInvalidArgument) << tx.status();
    EXPECT_THAT(std::string(tx.status().message()), HasSubstr("one-sided object"));
    absl::StatusOr<std::string> lf = LockFreeReadOn(from, as_fat);
    EXPECT_EQ(lf.status().code(), absl::StatusCode::kInvalidArgument) << lf.status();
    absl::Status freed = TxFreeOn(from, as_fat);
    EXPECT_EQ(freed.code(), absl::StatusCode::kInvalidArgument) << freed;
    EXPECT_THAT(std::string(freed.message()), HasSubstr("one-sided object"));
  }
  absl::StatusOr<std::string> after = Read(3, r, 0, 64);
  ASSERT_TRUE(after.ok()) << after.status() << ": the refused free must not have touched it";
  EXPECT_EQ(*after, bytes);
  EXPECT_EQ(*FetchAdd(3, r, 0, 1), Word(bytes));
  EXPECT_TRUE(Free(2, r).ok());
}

TEST_P(OneSidedTest, OpsAfterRawFreeFailEvenWhereTheSlotWasReused) {
  const RawPtr r = Alloc(1, 128);
  ASSERT_FALSE(r.is_null());
  ASSERT_TRUE(Write(2, r, 0, std::string(128, 'a')).ok());  // node 2 validated it (cached)
  ASSERT_TRUE(Read(2, r, 0, 8).ok());
  ASSERT_TRUE(Free(3, r).ok());
  for (NodeId from : {2u, 1u, 3u}) {
    SCOPED_TRACE(absl::StrCat("from node ", from));
    absl::StatusOr<std::string> read = Read(from, r, 0, 8);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition) << read.status();
    EXPECT_EQ(Write(from, r, 0, "zzzzzzzz").code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(Cas(from, r, 0, 0, 1).status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(FetchAdd(from, r, 0, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_EQ(Free(2, r).code(), absl::StatusCode::kFailedPrecondition) << "a second free";

  // The slot comes back for the same size: a new one-sided object there is another
  // incarnation, which the old pointer does not reach.
  RawPtr reused;
  std::vector<RawPtr> others;
  for (int i = 0; i < 64 && reused.is_null(); ++i) {
    const RawPtr n = Alloc(1, 128);
    ASSERT_FALSE(n.is_null());
    (n.addr == r.addr ? reused : others.emplace_back()) = n;
  }
  ASSERT_FALSE(reused.is_null()) << "the freed slot was not reused";
  EXPECT_NE(reused.incarnation, r.incarnation);
  EXPECT_EQ(Write(2, r, 0, "zzzzzzzz").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(FetchAdd(2, r, 8, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*Read(2, reused, 0, 128), std::string(128, '\0')) << "the stale pointer wrote into the new object";

  // Freed again, the slot may hold a transactional object: still refused, still intact.
  ASSERT_TRUE(Free(1, reused).ok());
  FatPtr tx_object;
  for (int i = 0; i < 64 && tx_object.is_null(); ++i) {
    const FatPtr t = TxObjectOn(1, 128, 'T');
    if (t.addr == r.addr) tx_object = t;
  }
  ASSERT_FALSE(tx_object.is_null()) << "the freed slot was not reused";
  for (RawPtr stale : {r, reused}) {
    EXPECT_EQ(Write(2, stale, 0, "zzzzzzzz").code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ(Cas(1, stale, 0, 0, 1).status().code(), absl::StatusCode::kFailedPrecondition);
  }
  absl::StatusOr<std::string> intact = LockFreeReadOn(3, tx_object);
  ASSERT_TRUE(intact.ok()) << intact.status();
  EXPECT_EQ(*intact, std::string(128, 'T'));
  for (const RawPtr& o : others) EXPECT_TRUE(Free(1, o).ok());
}

// Writes all-ones and adds to one object until an op fails: OK when that failure is
// FailedPrecondition (the object was freed).
Task<absl::Status> Hammer(Context& ctx, RawPtr r, std::atomic<uint64_t>* done_ops) {
  const std::string ones(r.size, '\xff');
  for (;;) {
    absl::Status s = co_await RawWrite(ctx, r, 0, std::span<const char>(ones.data(), ones.size()));
    if (s.ok()) s = (co_await RawFetchAdd64(ctx, r, 8, 1)).status();
    if (!s.ok()) co_return absl::IsFailedPrecondition(s) ? absl::OkStatus() : s;
    done_ops->fetch_add(1);
  }
}

// rawFree while other nodes' threads write the object as fast as they can: every op
// either completes before the free or fails, and none lands in the object that takes
// the slot next (the epoch round of rawFree at work, tx/one_sided.h invariant 3).
TEST_P(OneSidedTest, OpsRacingRawFreeNeverTouchTheSlotsNextObject) {
  for (int round = 0; round < 4; ++round) {
    SCOPED_TRACE(absl::StrCat("round ", round));
    const RawPtr r = Alloc(1, 64);
    ASSERT_FALSE(r.is_null());
    std::atomic<uint64_t> done_ops{0};
    struct Run {
      Notification done;
      absl::Status status;
    };
    std::vector<std::unique_ptr<Run>> runs;
    for (auto [n, t] : {std::pair<NodeId, size_t>{2, 0}, {2, 1}, {3, 0}, {3, 1}, {1, 1}}) {
      for (int i = 0; i < 4; ++i) {
        runs.push_back(std::make_unique<Run>());
        Run* run = runs.back().get();
        Context* ctx = &node(n).context(t);
        node(n).loop(t).Post([=, &done_ops] {
          Spawn(Hammer(*ctx, r, &done_ops), [run](absl::Status s) {
            run->status = Detached(s);
            run->done.Notify();
          });
        });
      }
    }
    const absl::Time until = absl::Now() + absl::Seconds(20);
    while (done_ops.load() < 200 && absl::Now() < until) absl::SleepFor(absl::Microseconds(200));
    ASSERT_GE(done_ops.load(), 200u);
    ASSERT_TRUE(Free(1, r).ok());
    RawPtr next;
    std::vector<RawPtr> others;
    for (int i = 0; i < 64 && next.is_null(); ++i) {
      const RawPtr n = Alloc(1, 64);
      ASSERT_FALSE(n.is_null());
      (n.addr == r.addr ? next : others.emplace_back()) = n;
    }
    for (auto& run : runs) {
      ASSERT_TRUE(run->done.WaitForNotificationWithTimeout(absl::Seconds(60)));
      EXPECT_TRUE(run->status.ok()) << run->status;
    }
    ASSERT_FALSE(next.is_null()) << "the freed slot was not reused";
    EXPECT_EQ(*Read(2, next, 0, 64), std::string(64, '\0')) << "a write through the freed pointer landed";
    ASSERT_TRUE(Free(1, next).ok());
    for (const RawPtr& o : others) ASSERT_TRUE(Free(1, o).ok());
  }
}

TEST_P(OneSidedTest, RawFreeInsideATransactionIsRefused) {
  const RawPtr r = Alloc(2, 16);
  ASSERT_FALSE(r.is_null());
  absl::Status inside = RunInContext<absl::Status>(node(2), [r](Context& ctx, auto finish) {
    TxHandle tx = txCreate(ctx);
    rawFree(ctx, r, [tx, finish](absl::Status s) mutable {
      txAbort(*tx);
      finish(s);
    });
  });
  EXPECT_EQ(inside.code(), absl::StatusCode::kFailedPrecondition) << inside;
  EXPECT_TRUE(Read(1, r, 0, 16).ok()) << "the refused free left it alive";
  EXPECT_TRUE(Free(2, r).ok());
}

// Other work open on the thread (here a transaction that a timer ends 20 ms later, as
// another session's would) only delays rawFree: it frees once that work has ended.
TEST_P(OneSidedTest, RawFreeWaitsForOtherWorkOfTheThread) {
  const RawPtr r = Alloc(2, 16);
  ASSERT_FALSE(r.is_null());
  absl::Status freed = RunInContext<absl::Status>(node(2), [r](Context& ctx, auto finish) {
    TxHandle other = txCreate(ctx);
    ctx.RunAfter(absl::Milliseconds(20), [other] { txAbort(*other); });
    rawFree(ctx, r, [finish](absl::Status s) mutable { finish(s); });
  });
  EXPECT_TRUE(freed.ok()) << freed;
  EXPECT_EQ(Read(1, r, 0, 16).status().code(), absl::StatusCode::kFailedPrecondition) << "freed";
}

// The holder's worker threads run nothing for remote one-sided ops (once the caller has
// the region's capability and has validated the object): no message reaches them.
TEST_P(OneSidedTest, TheHoldersWorkerThreadsRunNothingForRemoteOps) {
  const RawPtr r = Alloc(1, 256);
  ASSERT_FALSE(r.is_null());
  ASSERT_TRUE(Read(2, r, 0, 8).ok());  // capability and validation
  auto received = [&] {
    uint64_t sum = 0;
    for (size_t t = 0; t < 2; ++t) {
      sum += *RunInContext<absl::StatusOr<uint64_t>>(
          node(1), [](tx::ThreadContext& ctx, auto finish) { finish(ctx.msg().stats().received); }, t);
    }
    return sum;
  };
  const RawStats before = Stats(2);
  const uint64_t received_before = received();
  const int ops = static_cast<int>(Scaled(2000));
  absl::Status run = RunTask<absl::Status>(node(2), [r, ops](Context& ctx) -> Task<absl::Status> {
    return [](Context& ctx, RawPtr r, int ops) -> Task<absl::Status> {
      for (int i = 0; i < ops; ++i) {
        switch (i % 4) {
          case 0:
            if (absl::Status s = co_await RawWrite(ctx, r, (i * 8) % 248, std::string(8, 'x')); !s.ok()) co_return s;
            break;
          case 1: {
            absl::StatusOr<RawCopy> c = co_await RawRead(ctx, r, 0, 256);
            if (!c.ok()) co_return c.status();
            break;
          }
          case 2: {
            absl::StatusOr<uint64_t> c =
                co_await RawCas64(ctx, r, 248, static_cast<uint64_t>(i - 2), static_cast<uint64_t>(i));
            if (!c.ok()) co_return c.status();
            break;
          }
          case 3: {
            absl::StatusOr<uint64_t> c = co_await RawFetchAdd64(ctx, r, 240, 1);
            if (!c.ok()) co_return c.status();
            break;
          }
        }
      }
      co_return absl::OkStatus();
    }(ctx, r, ops);
  });
  ASSERT_TRUE(run.ok()) << run;
  const uint64_t received_after = received();
  const RawStats after = Stats(2);
  EXPECT_EQ(after.remote - before.remote, static_cast<uint64_t>(ops));
  EXPECT_EQ(after.local, before.local);
  EXPECT_LE(after.validations - before.validations, 1u) << "validated once per epoch, not per op";
  EXPECT_LE(received_after - received_before, static_cast<uint64_t>(ops) / 100)
      << "messages reached the holder's worker threads during " << ops << " one-sided ops";
  const RawStats holder = Stats(1);
  EXPECT_EQ(holder.remote + holder.local, 0u) << "the holder ran no op itself";
}

TEST_P(OneSidedTest, TheReadmeExamplePublishesAndLooksUp) {
  const RawPtr index = Alloc(1, 16);
  const RawPtr data = Alloc(2, 64 * 16);
  ASSERT_FALSE(index.is_null() || data.is_null());
  absl::StatusOr<std::string> none = RunTask<absl::StatusOr<std::string>>(
      node(3), [=](Context& ctx) { return LookupValue(ctx, index, data, 5); });
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound) << none.status();
  EXPECT_TRUE(RunTask<absl::Status>(node(3), [=](Context& ctx) {
                return PublishValue(ctx, index, data, 3, "hello");
              }).ok());
  absl::Status second =
      RunTask<absl::Status>(node(1), [=](Context& ctx) { return PublishValue(ctx, index, data, 4, "world"); });
  EXPECT_EQ(second.code(), absl::StatusCode::kAlreadyExists) << second;
  absl::StatusOr<std::string> found = RunTask<absl::StatusOr<std::string>>(
      node(2), [=](Context& ctx) { return LookupValue(ctx, index, data, 5); });
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(*found, "hello");
}

INSTANTIATE_TEST_SUITE_P(Backends, OneSidedTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
