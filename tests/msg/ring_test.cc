// RingSender and RingReceiver over a real fabric (each backend), driven by one thread so
// that wrap-around, back-pressure and refusal are deterministic.
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "farm/base/cpu_copy.h"
#include "farm/msg/ring_receiver.h"
#include "farm/msg/ring_sender.h"
#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm {
namespace {

using testing::TestFabricOptions;

constexpr uint32_t kRingBytes = 16 * 1024;

struct Delivered {
  ring::Header header;
  std::string payload;
};

class Collector : public RecordSink {
 public:
  void OnRecord(const ring::Header& h, absl::string_view payload) override {
    records.push_back({h, std::string(payload)});
  }
  std::vector<Delivered> records;
};

// Sender node S and receiver node R, connected both ways, one ring from S to R.
class RingTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    s_ = MakeFabric();
    r_ = MakeFabric();
    s_mem_ = std::make_unique<Region>(*Region::Create(kFirstPrivateRegion, 1 << 20));
    r_mem_ = std::make_unique<Region>(*Region::Create(kFirstPrivateRegion, 1 << 20));
    s_reg_ = *s_->RegisterRegion(*s_mem_);
    r_reg_ = *r_->RegisterRegion(*r_mem_);
    s_cq_ = *s_->CreateCompletionQueue();
    r_cq_ = *r_->CreateCompletionQueue();
    s_to_r_ = std::move(s_->Connect(r_->locator(), "", s_cq_.get(), 1)->endpoint);
    r_to_s_ = std::move(r_->Connect(s_->locator(), "", r_cq_.get(), 2)->endpoint);

    // Layout: R's ring at 0; S's staging at 0 and its head copy at 512 KiB; R's head
    // source word at 512 KiB.
    RingSenderConfig sc;
    sc.endpoint = s_to_r_.get();
    sc.ring = r_reg_.capability;
    sc.ring_offset = 0;
    sc.ring_bytes = kRingBytes;
    sc.staging = s_mem_->base();
    sc.staging_lkey = s_reg_.local.lkey;
    sc.head_copy = s_mem_->base() + kHeadOffset;
    sc.receiver_doorbell = kNoDoorbell;
    sc.max_backlog_bytes = 64 * 1024;
    sc.trailer_apart = !s_->WritesLandInAddressOrder();
    sender_config_ = sc;
    sender_ = std::make_unique<RingSender>(sc);
    RingReceiverConfig rc;
    rc.ring = r_mem_->base();
    rc.ring_bytes = kRingBytes;
    rc.head_region = s_reg_.capability;
    rc.head_offset = kHeadOffset;
    rc.head_source = r_mem_->base() + kHeadOffset;
    rc.head_source_lkey = r_reg_.local.lkey;
    receiver_ = std::make_unique<RingReceiver>(rc);
  }

  std::unique_ptr<Fabric> MakeFabric() {
    auto f = Fabric::Create(TestFabricOptions(GetParam()));
    EXPECT_TRUE(f.ok()) << f.status();
    (void)(*f)->Listen([](absl::string_view) { return AcceptResult{}; });
    return std::move(*f);
  }

  // One step of both threads' work: completions, delivery, returning space, backlog.
  int Pump() {
    Completion c[16];
    for (CompletionQueue* cq : {s_cq_.get(), r_cq_.get()}) {
      const int n = cq->Poll(absl::MakeSpan(c));
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(c[i].status, CompletionStatus::kSuccess) << OpcodeName(c[i].opcode);
      }
    }
    const int got = receiver_->Poll(64, collector_);
    receiver_->MaybeReturnSpace(r_to_s_.get());
    EXPECT_TRUE(sender_->Flush().ok());
    return got;
  }

  // Pumps until `n` records have been delivered in total.
  void DeliverUntil(size_t n) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (collector_.records.size() < n) {
      Pump();
      ASSERT_LT(absl::Now(), deadline) << "delivered only " << collector_.records.size();
    }
  }

  absl::Status Send(uint64_t id, const std::string& payload) {
    ring::Header h;
    h.handler = 9;
    h.rpc_id = id;
    return sender_->Send(h, payload);
  }

  static constexpr uint64_t kHeadOffset = 512 * 1024;
  std::unique_ptr<Region> s_mem_, r_mem_;  // outlive the fabrics that registered them
  std::unique_ptr<Fabric> s_, r_;
  RegisteredRegion s_reg_, r_reg_;
  std::unique_ptr<CompletionQueue> s_cq_, r_cq_;
  std::unique_ptr<Endpoint> s_to_r_, r_to_s_;
  RingSenderConfig sender_config_;
  std::unique_ptr<RingSender> sender_;
  std::unique_ptr<RingReceiver> receiver_;
  Collector collector_;
};

std::string Payload(uint64_t id, size_t size) {
  std::string p(size, '\0');
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<char>((id * 131 + i * 7) & 0xFF);
  return p;
}

TEST_P(RingTest, WrapsAroundManyTimesWithMixedSizesInOrder) {
  std::mt19937_64 rng(42);
  const size_t max_payload = sender_->max_payload_bytes();
  std::uniform_int_distribution<size_t> size(0, max_payload);
  constexpr uint64_t kMessages = 20000;
  uint64_t bytes = 0;
  for (uint64_t id = 0; id < kMessages; ++id) {
    const size_t n = id % 10 == 0 ? max_payload : size(rng) % (id % 3 == 0 ? 64 : max_payload + 1);
    bytes += ring::RecordBytes(n);
    absl::Status sent;
    while (absl::IsResourceExhausted(sent = Send(id, Payload(id, n)))) Pump();  // back-pressure
    ASSERT_TRUE(sent.ok()) << sent;
    if (id % 7 == 0) Pump();
  }
  DeliverUntil(kMessages);
  EXPECT_GT(bytes / kRingBytes, 100u) << "the ring did not wrap often enough to test";
  for (uint64_t id = 0; id < kMessages; ++id) {
    const Delivered& d = collector_.records[id];
    ASSERT_EQ(d.header.rpc_id, id) << "out of order";
    ASSERT_EQ(d.header.handler, 9);
    ASSERT_EQ(d.payload, Payload(id, d.payload.size())) << "corrupted payload " << id;
  }
  EXPECT_GT(sender_->stats().waits, 0u) << "the sender never had to wait for space";
}

TEST_P(RingTest, FullRingMakesTheSenderWaitAndNothingIsOverwritten) {
  // The receiver does not poll: the ring fills, later messages wait in the backlog.
  const std::string payload(1000, 'x');
  uint64_t accepted = 0;
  for (;; ++accepted) {
    absl::Status s = Send(accepted, Payload(accepted, 1000));
    if (!s.ok()) {
      EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
      break;
    }
    ASSERT_LT(accepted, 1000u) << "the backlog never filled";
  }
  EXPECT_TRUE(sender_->has_backlog());
  const uint64_t fit = sender_->stats().records;
  EXPECT_LT(fit * ring::RecordBytes(1000), kRingBytes + 1) << "more went out than the ring holds";
  EXPECT_GT(fit, 0u);
  // The refused message was not queued; everything accepted arrives, in order, intact.
  DeliverUntil(accepted);
  for (int i = 0; i < 20; ++i) Pump();
  ASSERT_EQ(collector_.records.size(), accepted);
  for (uint64_t id = 0; id < accepted; ++id) {
    ASSERT_EQ(collector_.records[id].header.rpc_id, id);
    ASSERT_EQ(collector_.records[id].payload, Payload(id, 1000));
  }
  EXPECT_FALSE(sender_->has_backlog());
}

TEST_P(RingTest, OversizeMessageIsRefusedAndNothingIsWritten) {
  const size_t max = sender_->max_payload_bytes();
  EXPECT_EQ(max, kRingBytes / 4 - ring::kOverheadBytes);
  absl::Status s = Send(1, std::string(max + 1, 'y'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("exceeds the limit"), std::string::npos) << s;
  EXPECT_EQ(Send(2, std::string(kRingBytes * 2, 'z')).code(), absl::StatusCode::kInvalidArgument);
  for (int i = 0; i < 10; ++i) Pump();
  EXPECT_TRUE(collector_.records.empty());
  for (uint32_t i = 0; i < kRingBytes; ++i) ASSERT_EQ(r_mem_->base()[i], 0) << i;
  ASSERT_TRUE(Send(3, std::string(max, 'w')).ok()) << "the largest allowed message must go";
  DeliverUntil(1);
  EXPECT_EQ(collector_.records[0].payload.size(), max);
}

TEST_P(RingTest, ProcessedSpaceIsZeroed) {
  for (uint64_t id = 0; id < 5; ++id) ASSERT_TRUE(Send(id, Payload(id, 300)).ok());
  DeliverUntil(5);
  for (uint32_t i = 0; i < kRingBytes; ++i) ASSERT_EQ(r_mem_->base()[i], 0) << i;
}

TEST_P(RingTest, CorruptRecordStopsTheRing) {
  ASSERT_TRUE(Send(0, "first").ok());
  DeliverUntil(1);
  // A record with a wrong trailer sequence where the next one belongs.
  const uint64_t head = ring::RecordBytes(5);
  ring::Header h;
  h.size = static_cast<uint32_t>(ring::RecordBytes(8));
  uint64_t words[3];
  ring::EncodeHeader(h, words);
  std::memcpy(r_mem_->base() + head, words, sizeof(words));
  const uint64_t bad_trailer = ring::Trailer(77);
  StoreWordRelease(r_mem_->base() + head + h.size - 8, bad_trailer);
  Pump();
  EXPECT_TRUE(receiver_->status().ok()) << "a word may still be landing: not yet an error";
  absl::SleepFor(absl::FromChrono(RingReceiver::kSettleTime) + absl::Milliseconds(20));
  Pump();
  EXPECT_EQ(receiver_->status().code(), absl::StatusCode::kDataLoss);
  ASSERT_TRUE(Send(1, "after").ok());
  for (int i = 0; i < 10; ++i) Pump();
  EXPECT_EQ(collector_.records.size(), 1u) << "a corrupt ring kept delivering";
}

// With the trailer in its own WRITE (for fabrics whose WRITEs land in any byte order),
// records of every size, wraps included, arrive whole and in order.
TEST_P(RingTest, TrailerApartDeliversEveryRecordWhole) {
  RingSenderConfig apart = sender_config_;
  apart.trailer_apart = true;
  sender_ = std::make_unique<RingSender>(apart);
  constexpr uint64_t kCount = 200;
  for (uint64_t id = 0; id < kCount; ++id) {
    while (!Send(id, Payload(id, 1 + (id * 37) % 3000)).ok()) Pump();
    Pump();
  }
  DeliverUntil(kCount);
  for (uint64_t id = 0; id < kCount; ++id) {
    ASSERT_EQ(collector_.records[id].header.rpc_id, id);
    ASSERT_EQ(collector_.records[id].payload, Payload(id, 1 + (id * 37) % 3000)) << id;
  }
}

// Forwards to an endpoint, but answers ResourceExhausted (a full send queue) to the
// next `refuse` Posts: the seam for a record written to staging and not posted.
class RefusingEndpoint : public Endpoint {
 public:
  explicit RefusingEndpoint(Endpoint* inner) : inner_(inner) {}
  absl::Status Post(const WorkRequest& wr) override {
    if (refuse > 0) {
      --refuse;
      return absl::ResourceExhaustedError("send queue full (injected)");
    }
    return inner_->Post(wr);
  }
  absl::Status status() const override { return inner_->status(); }
  uint64_t context() const override { return inner_->context(); }
  int refuse = 0;

 private:
  Endpoint* inner_;
};

// Sends `payload` built in place; counts the builder's calls in *writes.
absl::Status SendBuilt(RingSender& sender, uint64_t id, const std::string& payload, int* writes) {
  ring::Header h;
  h.handler = 9;
  h.rpc_id = id;
  return sender.Send(h, PayloadBuilder{payload.size(), [&](char* dst) {
                                         ++*writes;
                                         std::memcpy(dst, payload.data(), payload.size());
                                       }});
}

// A payload built in place is written once wherever it goes — straight into the ring,
// into the backlog when the ring is full, or kept from the staging buffer when its WRITE
// could not be posted — and arrives whole and in order with copied ones.
TEST_P(RingTest, PayloadsBuiltInPlaceAreWrittenOnceWhereverTheyGo) {
  RefusingEndpoint refusing(s_to_r_.get());
  RingSenderConfig config = sender_config_;
  config.endpoint = &refusing;
  sender_ = std::make_unique<RingSender>(config);
  uint64_t id = 0;
  std::vector<std::string> sent;
  auto send_built = [&](size_t size) {
    sent.push_back(Payload(id, size));
    int writes = 0;
    const absl::Status s = SendBuilt(*sender_, id++, sent.back(), &writes);
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(writes, 1) << "payload " << id - 1;
  };
  send_built(100);  // into the ring
  sent.push_back(Payload(id, 7));
  ASSERT_TRUE(Send(id++, sent.back()).ok());  // a copied one between
  send_built(0);
  refusing.refuse = 2;  // (trailer_apart posts twice: refused either way)
  send_built(500);      // written to staging, not posted: kept from there
  EXPECT_TRUE(sender_->has_backlog());
  refusing.refuse = 0;
  Pump();
  EXPECT_FALSE(sender_->has_backlog());
  // Unpolled, the ring fills: the rest waits in the backlog, each written once.
  while (!sender_->has_backlog()) send_built(1000);
  send_built(1000);
  send_built(1000);
  DeliverUntil(sent.size());
  for (int i = 0; i < 20; ++i) Pump();
  ASSERT_EQ(collector_.records.size(), sent.size());
  for (uint64_t i = 0; i < sent.size(); ++i) {
    ASSERT_EQ(collector_.records[i].header.rpc_id, i);
    ASSERT_EQ(collector_.records[i].payload, sent[i]) << i;
  }
  // An oversize builder is refused before it is called.
  int writes = 0;
  EXPECT_EQ(SendBuilt(*sender_, id, std::string(sender_->max_payload_bytes() + 1, 'o'), &writes).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(writes, 0);
}

// A software NIC may land a word byte by byte: a half-written word 0 or trailer is
// waited for, and the record is delivered once it is whole.
TEST_P(RingTest, HalfWrittenWordsAreWaitedFor) {
  ring::Header h;
  h.kind = ring::Kind::kMessage;
  h.size = static_cast<uint32_t>(ring::RecordBytes(8));
  h.pad = static_cast<uint8_t>(h.size - ring::kOverheadBytes - 8);
  uint64_t words[3];
  ring::EncodeHeader(h, words);
  const uint64_t trailer = ring::Trailer(0);
  char* at = r_mem_->base();
  std::memcpy(at + 8, &words[1], 16);
  std::memcpy(at + ring::kHeaderBytes, "payload!", 8);
  // Word 0 with only its first bytes (the size) landed: not a valid header yet.
  std::memcpy(at, &words[0], 2);
  Pump();
  EXPECT_TRUE(receiver_->status().ok()) << receiver_->status();
  std::memcpy(at, &words[0], 8);
  // A trailer that is neither 0 nor the expected one (bytes of it still landing).
  const uint64_t landing = trailer | (uint64_t{0xAB} << 48);
  std::memcpy(at + h.size - 8, &landing, 8);
  Pump();
  EXPECT_TRUE(receiver_->status().ok()) << receiver_->status();
  EXPECT_TRUE(collector_.records.empty());
  std::memcpy(at + h.size - 8, &trailer, 8);
  DeliverUntil(1);
  EXPECT_EQ(collector_.records[0].payload, "payload!");
  EXPECT_TRUE(receiver_->status().ok());
}

TEST(RingFormatTest, DecodesWhatItEncodes) {
  ring::Header h;
  h.size = 64;
  h.pad = 3;
  h.flags = ring::kFlagRequest;
  h.handler = 0xBEEF;
  h.src_thread = 3;
  h.dst_thread = 4;
  h.status = 5;
  h.rpc_id = 0x123456789;
  uint64_t w[3];
  ring::EncodeHeader(h, w);
  absl::StatusOr<ring::Header> d = ring::DecodeWord0(w[0], 0, 4096);
  ASSERT_TRUE(d.ok()) << d.status();
  ring::DecodeRest(w[1], w[2], *d);
  EXPECT_EQ(d->size, 64u);
  EXPECT_EQ(d->pad, 3);
  EXPECT_EQ(d->flags, ring::kFlagRequest);
  EXPECT_EQ(d->handler, 0xBEEF);
  EXPECT_EQ(d->src_thread, 3);
  EXPECT_EQ(d->dst_thread, 4);
  EXPECT_EQ(d->status, 5);
  EXPECT_EQ(d->rpc_id, 0x123456789u);
  EXPECT_EQ(d->payload_bytes(), 64u - 32 - 3);
}

TEST(RingFormatTest, RejectsMalformedWords) {
  ring::Header h;
  h.size = 64;
  uint64_t w[3];
  ring::EncodeHeader(h, w);
  const uint64_t good = w[0];
  EXPECT_TRUE(ring::DecodeWord0(good, 0, 4096).ok());
  EXPECT_FALSE(ring::DecodeWord0(good ^ (uint64_t{1} << 40), 0, 4096).ok()) << "version";
  EXPECT_FALSE(ring::DecodeWord0((good & ~uint64_t{0xFF} << 32) | (uint64_t{9} << 32), 0, 4096).ok())
      << "kind";
  EXPECT_FALSE(ring::DecodeWord0((good & ~uint64_t{0xFFFFFFFF}) | 60, 0, 4096).ok()) << "unaligned";
  EXPECT_FALSE(ring::DecodeWord0((good & ~uint64_t{0xFFFFFFFF}) | 16, 0, 4096).ok()) << "tiny";
  EXPECT_FALSE(ring::DecodeWord0(good, 4096 - 32, 4096).ok()) << "runs past the end";
  EXPECT_FALSE(ring::DecodeWord0((good & ~uint64_t{0xFFFFFFFF}) | 2048, 0, 4096).ok())
      << "over a quarter of the ring";
  EXPECT_TRUE(ring::DecodeWord0(ring::PadWord(96), 4000, 4096).ok());
  EXPECT_FALSE(ring::DecodeWord0(ring::PadWord(96), 3000, 4096).ok()) << "pad short of the end";
}

INSTANTIATE_TEST_SUITE_P(Backends, RingTest, ::testing::ValuesIn(farm::testing::TestBackends()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace farm
