#include "tools/fabric_bench/bench_server.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "farm/event/event_loop.h"
#include "farm/fabric/fabric.h"
#include "farm/msg/messenger.h"
#include "tools/fabric_bench/bench_protocol.h"
#include "tools/fabric_bench/tcp_baseline.h"
#include "tools/fabric_bench/bench_support.h"

namespace farm::bench {

int RunServer(const ServerOptions& options) {
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "bench server: %s\n", s.ToString().c_str());
    return 1;
  };
  absl::StatusOr<std::unique_ptr<Fabric>> fabric = Fabric::Create(BenchFabricOptions(options.backend, options.device));
  if (!fabric.ok()) return fail(fabric.status());
  absl::StatusOr<Region> region = Region::Create(kServerRegion, options.region_bytes);
  if (!region.ok()) return fail(region.status());
  // Touch every page now so that no measurement pays for page faults.
  for (uint64_t i = 0; i < region->size(); i += 4096) region->base()[i] = static_cast<char>(i >> 12);
  absl::StatusOr<RegisteredRegion> registered = (*fabric)->RegisterRegion(*region);
  if (!registered.ok()) return fail(registered.status());

  absl::StatusOr<std::unique_ptr<LoopThread>> loop = StartLoop(**fabric, options.loop);
  if (!loop.ok()) return fail(loop.status());
  MessengerOptions mo;
  mo.node_id = kServerNode;
  absl::StatusOr<std::unique_ptr<Messenger>> messenger =
      Messenger::Create(fabric->get(), {&(*loop)->loop()}, mo);
  if (!messenger.ok()) return fail(messenger.status());
  const char* memory = region->base();
  const uint64_t bytes = region->size();
  (void)(*messenger)->RegisterHandler(kReadBlock, [memory, bytes](MsgThread& t, const Message& m) {
    ReadRequest req;
    if (m.payload.size() != sizeof(req)) {
      (void)t.ReplyError(m.reply_to, absl::InvalidArgumentError("bad read request"));
      return;
    }
    std::memcpy(&req, m.payload.data(), sizeof(req));
    if (req.size > bytes || req.offset > bytes - req.size) {
      (void)t.ReplyError(m.reply_to, absl::OutOfRangeError("read outside the region"));
      return;
    }
    (void)t.Reply(m.reply_to, absl::string_view(memory + req.offset, req.size));
  });
  if (absl::Status s = (*messenger)->Start(); !s.ok()) return fail(s);

  std::unique_ptr<TcpBaselineServer> baseline;
  if (options.tcp_baseline) {
    absl::StatusOr<std::unique_ptr<TcpBaselineServer>> b = TcpBaselineServer::Start(memory, bytes);
    if (!b.ok()) return fail(b.status());
    baseline = std::move(*b);
  }
  std::printf("READY %s %s %u\n", (*fabric)->locator().c_str(),
              EncodeCapability(registered->capability).c_str(),
              baseline ? baseline->port() : 0u);
  std::fflush(stdout);
  char line[64];
  while (std::fgets(line, sizeof(line), stdin) != nullptr) {
  }
  messenger->reset();
  return 0;
}

}  // namespace farm::bench
