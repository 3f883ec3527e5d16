#include "tools/fabric_bench/farm_measure.h"

#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "farm/base/mutex.h"
#include "tools/common/latency.h"
#include "tools/fabric_bench/bench_protocol.h"
#include "tools/fabric_bench/bench_support.h"

namespace farm::bench {
namespace {

using Clock = std::chrono::steady_clock;

Clock::duration ToClock(absl::Duration d) {
  return std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(d));
}

}  // namespace

absl::StatusOr<std::unique_ptr<OneSidedClient>> OneSidedClient::Connect(
    const std::string& backend, const std::string& device, const std::string& locator,
    const RegionCapability& target) {
  std::unique_ptr<OneSidedClient> r(new OneSidedClient());
  r->target_ = target;
  absl::StatusOr<std::unique_ptr<Fabric>> fabric =
      Fabric::Create(BenchFabricOptions(backend, device));
  if (!fabric.ok()) return fabric.status();
  r->fabric_ = std::move(*fabric);
  absl::StatusOr<Region> buffer = Region::Create(kFirstPrivateRegion, 4 << 20);
  if (!buffer.ok()) return buffer.status();
  r->buffer_ = std::make_unique<Region>(std::move(*buffer));
  absl::StatusOr<RegisteredRegion> reg = r->fabric_->RegisterRegion(*r->buffer_);
  if (!reg.ok()) return reg.status();
  r->local_ = reg->local;
  absl::StatusOr<std::unique_ptr<CompletionQueue>> cq = r->fabric_->CreateCompletionQueue();
  if (!cq.ok()) return cq.status();
  r->cq_ = std::move(*cq);
  absl::StatusOr<Connection> conn =
      r->fabric_->Connect(locator, OneSidedHello(kClientNode), r->cq_.get(), 0);
  if (!conn.ok()) return conn.status();
  r->endpoint_ = std::move(conn->endpoint);
  return r;
}

absl::StatusOr<Completion> OneSidedClient::Wait() {
  Completion c;
  while (cq_->Poll(absl::MakeSpan(&c, 1)) == 0) {
  }
  if (c.status != CompletionStatus::kSuccess) {
    return absl::InternalError(absl::StrCat(OpcodeName(c.opcode), " failed: ",
                                            CompletionStatusName(c.status)));
  }
  return c;
}

absl::StatusOr<Measurement> OneSidedClient::Measure(Opcode op, uint32_t size, int window,
                                                    absl::Duration duration) {
  const bool atomic = op == Opcode::kCompareSwap || op == Opcode::kFetchAdd;
  if (atomic) size = 8;
  RandomOffsets offsets(target_.length, size);
  WorkRequest wr;
  wr.opcode = op;
  wr.length = size;
  wr.lkey = local_.lkey;
  wr.remote = &target_;
  wr.compare_add = op == Opcode::kFetchAdd ? 1 : 0;  // CAS 0 -> 0 leaves the word as it is
  auto post = [&](uint64_t slot) {
    wr.wr_id = slot;
    wr.local = local_.base + slot * size;
    wr.remote_offset = offsets.Next();
    return endpoint_->Post(wr);
  };
  Measurement m;
  LatencySamples samples;
  for (const auto end = Clock::now() + ToClock(duration); Clock::now() < end;) {
    const auto t0 = Clock::now();
    if (absl::Status s = post(0); !s.ok()) return s;
    if (absl::StatusOr<Completion> c = Wait(); !c.ok()) return c.status();
    samples.Add(static_cast<uint64_t>((Clock::now() - t0).count()));
  }
  m.p50_us = samples.PercentileUs(50);
  m.p99_us = samples.PercentileUs(99);

  for (int i = 0; i < window; ++i) {
    if (absl::Status s = post(i); !s.ok()) return s;
  }
  uint64_t completed = 0;
  const auto start = Clock::now();
  const auto end = start + ToClock(duration);
  auto now = start;
  int in_flight = window;
  Completion batch[64];
  std::vector<WorkRequest> refill;
  refill.reserve(64);
  while (in_flight > 0) {
    const int n = cq_->Poll(absl::MakeSpan(batch));
    if (n == 0) continue;
    now = Clock::now();
    refill.clear();
    for (int i = 0; i < n; ++i) {
      if (batch[i].status != CompletionStatus::kSuccess) {
        return absl::InternalError(absl::StrCat(OpcodeName(op), " failed: ",
                                                CompletionStatusName(batch[i].status)));
      }
      --in_flight;
      if (now < end) {
        ++completed;
        WorkRequest next = wr;
        next.wr_id = batch[i].wr_id;
        next.local = local_.base + batch[i].wr_id * size;
        next.remote_offset = offsets.Next();
        refill.push_back(next);
      }
    }
    // Refill the window as one batch, as an application issuing several reads would.
    size_t posted = 0;
    if (absl::Status s = endpoint_->PostBatch(refill, &posted); !s.ok()) return s;
    in_flight += static_cast<int>(posted);
  }
  m.ops_per_second = completed / std::chrono::duration<double>(std::min(now, end) - start).count();
  return m;
}

absl::StatusOr<std::unique_ptr<RpcReader>> RpcReader::Connect(const std::string& backend,
                                                              const std::string& device,
                                                              const std::string& locator,
                                                              uint64_t region_bytes,
                                                              const EventLoopOptions& loop_options) {
  std::unique_ptr<RpcReader> r(new RpcReader());
  r->region_bytes_ = region_bytes;
  absl::StatusOr<std::unique_ptr<Fabric>> fabric =
      Fabric::Create(BenchFabricOptions(backend, device));
  if (!fabric.ok()) return fabric.status();
  r->fabric_ = std::move(*fabric);
  absl::StatusOr<std::unique_ptr<LoopThread>> loop = StartLoop(*r->fabric_, loop_options);
  if (!loop.ok()) return loop.status();
  r->loop_ = std::move(*loop);
  MessengerOptions mo;
  mo.node_id = kClientNode;
  absl::StatusOr<std::unique_ptr<Messenger>> messenger =
      Messenger::Create(r->fabric_.get(), {&r->loop_->loop()}, mo);
  if (!messenger.ok()) return messenger.status();
  r->messenger_ = std::move(*messenger);
  if (absl::Status s = r->messenger_->Start(); !s.ok()) return s;
  // Returns once the server has linked back too: responses travel on its ring to us.
  if (absl::Status s = r->messenger_->Connect(kServerNode, locator); !s.ok()) return s;
  return r;
}

RpcReader::~RpcReader() {
  messenger_.reset();  // while the loop runs
  loop_.reset();
}

namespace {

// Keeps `window` calls in flight from the loop thread until `end`: each response
// issues the next call from its continuation (the event-driven style of the API).
struct CallDriver {
  MsgThread* thread;
  RandomOffsets offsets;
  uint32_t size;
  Clock::time_point end;
  LatencySamples* samples;  // null: count only
  EventLoop* loop;           // the thread's
  uint64_t completed = 0;
  Clock::time_point stopped_at{};
  int active = 0;
  absl::Status error;
  Notification done;

  void Issue() {
    const ReadRequest req{offsets.Next(), size, 0};
    // Latency runs read the clock per call; rate runs use the loop's time per iteration.
    const auto t0 = samples != nullptr ? Clock::now() : Clock::time_point{};
    absl::Status s = thread->Call(
        kServerNode, kReadBlock, absl::string_view(reinterpret_cast<const char*>(&req), sizeof(req)),
        [this, t0](const absl::Status& status, absl::string_view payload) {
          const auto now = samples != nullptr ? Clock::now() : loop->now();
          if (!status.ok()) {
            error = status;
          } else if (payload.size() != size) {
            error = absl::DataLossError("short response");
          } else if (now < end) {
            ++completed;
            if (samples != nullptr) samples->Add(static_cast<uint64_t>((now - t0).count()));
          }
          if (error.ok() && now < end) {
            Issue();
          } else {
            Finish(now);
          }
        });
    if (!s.ok()) {
      error = s;
      Finish(Clock::now());
    }
  }
  void Finish(Clock::time_point now) {
    if (stopped_at == Clock::time_point{}) stopped_at = std::min(now, end);
    if (--active == 0) done.Notify();
  }
};

}  // namespace

absl::StatusOr<Measurement> RpcReader::Measure(uint32_t size, int window, absl::Duration duration) {
  Measurement m;
  LatencySamples samples;
  for (int phase = 0; phase < 2; ++phase) {
    const int calls = phase == 0 ? 1 : window;
    CallDriver d{&messenger_->thread(0), RandomOffsets(region_bytes_, size), size,
                 Clock::now() + ToClock(duration), phase == 0 ? &samples : nullptr,
                 &loop_->loop()};
    const auto start = Clock::now();
    loop_->loop().Post([&d, calls] {
      d.active = calls;
      for (int i = 0; i < calls; ++i) d.Issue();
    });
    d.done.WaitForNotification();
    if (!d.error.ok()) return d.error;
    if (phase == 0) {
      m.p50_us = samples.PercentileUs(50);
      m.p99_us = samples.PercentileUs(99);
    } else {
      m.ops_per_second = d.completed / std::chrono::duration<double>(d.stopped_at - start).count();
    }
  }
  return m;
}

Measurement MeasureRawCopy(uint32_t size, uint64_t bytes, absl::Duration duration) {
  absl::StatusOr<Region> region = Region::Create(kFirstPrivateRegion, bytes);
  for (uint64_t i = 0; i < region->size(); i += 4096) region->base()[i] = 1;
  std::vector<char> dst(size);
  RandomOffsets offsets(bytes, size);
  uint64_t copies = 0, sink = 0;
  const auto start = Clock::now();
  const auto end = start + ToClock(duration);
  auto now = start;
  while (now < end) {
    for (int i = 0; i < 1024; ++i) {
      std::memcpy(dst.data(), region->base() + offsets.Next(), size);
      sink += static_cast<unsigned char>(dst[i % size]);
    }
    copies += 1024;
    now = Clock::now();
  }
  volatile uint64_t keep = sink;  // the copies must not be optimised away
  (void)keep;
  Measurement m;
  m.ops_per_second = copies / std::chrono::duration<double>(now - start).count();
  m.p50_us = m.p99_us = 1e6 / m.ops_per_second;  // mean time per copy
  return m;
}

}  // namespace farm::bench
