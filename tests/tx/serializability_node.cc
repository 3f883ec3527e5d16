// The tx_node child role: one node process of the cluster SerializabilityProcessTest
// starts (args: node_id backend members dir listen; static membership, r = 3, two worker
// threads, data under <dir>/node-<id>). It prints READY once linked to every peer, then
// serves the commands of serializability_protocol.h until STOP or the end of its stdin.
#include <cstdio>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "farm/api/farm.h"
#include "tests/support/child_process.h"
#include "tests/support/history_checker.h"
#include "tests/support/node_cluster.h"
#include "tests/support/tx_read_all.h"
#include "tests/tx/serializability_bank.h"
#include "tests/tx/serializability_history.h"
#include "tests/tx/serializability_protocol.h"
#include "tests/tx/serializability_ser.h"

namespace farm::tx::testing {
namespace {

using farm::testing::HistoryChecker;
using farm::testing::HistoryTransaction;

constexpr char kSecret[] = "serializability-process-test-secret-0123";

// Allocates `count` objects with sizes cycling through `sizes`, 8 per transaction, in
// transactions on thread 0 (single-machine commits here). Bank accounts start with
// kInitialBalance; part 1 objects with 0 (the history's initial value).
absl::StatusOr<std::vector<FatPtr>> Allocate(node::Node& node, bool bank, size_t count,
                                             const std::vector<uint32_t>& sizes) {
  std::vector<FatPtr> out;
  while (out.size() < count) {
    const size_t n = std::min<size_t>(8, count - out.size());
    std::vector<uint32_t> batch;
    for (size_t i = 0; i < n; ++i) batch.push_back(sizes[(out.size() + i) % sizes.size()]);
    using Result = absl::StatusOr<std::vector<FatPtr>>;
    Result ptrs =
        farm::testing::RunInContext<Result>(node, [batch, bank](Context& ctx, auto finish) {
          struct State {
            TxHandle tx;
            std::vector<FatPtr> ptrs;
          };
          auto st = std::make_shared<State>();
          st->tx = txCreate(ctx);
          auto next = std::make_shared<std::function<void()>>();
          *next = [st, batch, bank, finish, next]() mutable {
            if (st->ptrs.size() == batch.size()) {
              txCommit(*st->tx, [st, finish, next](absl::Status s) mutable {
                *next = nullptr;  // breaks the cycle
                if (!s.ok()) return finish(s);
                finish(st->ptrs);
              });
              return;
            }
            txAlloc(*st->tx, batch[st->ptrs.size()], Addr(),
                    [st, bank, finish, next](absl::StatusOr<ObjBuf*> o) mutable {
                      if (!o.ok()) {
                        *next = nullptr;
                        return finish(o.status());
                      }
                      if (bank) StoreAccount((*o)->data(), kInitialBalance, 0);
                      st->ptrs.push_back((*o)->ptr());
                      (*next)();
                    });
          };
          (*next)();
        });
    if (!ptrs.ok()) {
      if (ptrs.status().code() == absl::StatusCode::kAborted) continue;
      return ptrs.status();
    }
    out.insert(out.end(), ptrs->begin(), ptrs->end());
  }
  return out;
}

// One read-only transaction over `objects`, retried until it commits (20 attempts).
// Returns the copies' payloads.
absl::StatusOr<std::vector<std::string>> ReadAll(node::Node& node,
                                                 const std::vector<FatPtr>& objects,
                                                 uint64_t* start_ns, uint64_t* end_ns) {
  using Result = absl::StatusOr<std::vector<std::string>>;
  Result r = absl::AbortedError("not run");
  for (int attempt = 0; attempt < 20 && r.status().code() == absl::StatusCode::kAborted;
       ++attempt) {
    *start_ns = HistoryChecker::NowNs();
    r = farm::testing::ReadAllInOneTx(node, objects);
    *end_ns = HistoryChecker::NowNs();
  }
  return r;
}

// A node process: args node_id backend members dir listen.
FARM_CHILD_ROLE(tx_node) {
  if (args.size() != 5) return 2;
  node::NodeOptions o;
  if (!absl::SimpleAtoi(args[0], &o.node_id)) return 2;
  o.fabric = args[1];
  o.static_members = args[2];
  const std::string dir = args[3];
  if (o.fabric == "tcp") o.listen = args[4];
  o.data_dir = absl::StrCat(dir, "/node-", o.node_id);
  o.cluster_secret = kSecret;
  o.threads = 2;
  o.region_bytes = 32u << 20;
  o.capacity_bytes = 256u << 20;
  o.replication = 3;
  absl::StatusOr<std::unique_ptr<node::Node>> created = node::Node::Create(o);
  if (!created.ok()) {
    std::printf("ERROR create: %s\n", created.status().ToString().c_str());
    return 3;
  }
  node::Node& node = **created;
  if (absl::Status s = node.Start(); !s.ok()) {
    std::printf("ERROR start: %s\n", s.ToString().c_str());
    return 3;
  }
  // Linked to every peer, with a first region of its own.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  auto ready = [&] {
    for (NodeId peer = 1; peer <= kNodes; ++peer) {
      if (peer != o.node_id && !node.messenger().IsConnected(peer)) return false;
    }
    return !node.allocator().blocks().Regions().empty();
  };
  while (!ready() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  if (!ready()) {
    std::printf("ERROR node %u not linked to every peer within 30 s\n", o.node_id);
    return 3;
  }
  std::printf("READY\n");
  std::string line;
  int rc = 0;
  while (rc == 0 && std::getline(std::cin, line)) {
    const std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (w.empty()) continue;
    if (w[0] == "STOP") break;
    if (w[0] == "ALLOC" && w.size() >= 4) {
      size_t count = 0;
      std::vector<uint32_t> sizes;
      for (size_t i = 3; i < w.size(); ++i) {
        uint32_t s;
        if (absl::SimpleAtoi(w[i], &s)) sizes.push_back(s);
      }
      if (!absl::SimpleAtoi(w[2], &count) || sizes.empty()) return 2;
      absl::StatusOr<std::vector<FatPtr>> ptrs = Allocate(node, w[1] == "bank", count, sizes);
      if (!ptrs.ok()) {
        std::printf("ERROR alloc: %s\n", ptrs.status().ToString().c_str());
        return 3;
      }
      std::printf("OBJECTS %s\n", FormatPtrs(*ptrs).c_str());
    } else if (w[0] == "SER") {
      rc = RunSer(node, w, dir);
    } else if (w[0] == "SERFINAL") {
      HistoryTransaction t;
      const std::vector<FatPtr> objects = ParsePtrs(w, 1);
      absl::StatusOr<std::vector<std::string>> seen =
          ReadAll(node, objects, &t.start_ns, &t.end_ns);
      if (!seen.ok()) {
        std::printf("ERROR final read: %s\n", seen.status().ToString().c_str());
        return 3;
      }
      t.id = 1;  // no driver value has a zero node field
      for (size_t i = 0; i < objects.size(); ++i) {
        uint64_t v = 0;
        if (!LoadValue((*seen)[i], &v))
          std::printf("ERROR final read: %s mixes two values\n", objects[i].ToString().c_str());
        t.Read(objects[i].addr.raw(), v);
      }
      std::printf("FINAL %s\n", FormatTransaction(t).c_str());
    } else if (w[0] == "BANK") {
      rc = RunBank(node, w);
    } else if (w[0] == "AUDIT") {
      const std::vector<FatPtr> accounts = ParsePtrs(w, 1);
      uint64_t start, end;
      absl::StatusOr<std::vector<std::string>> seen = ReadAll(node, accounts, &start, &end);
      if (!seen.ok()) {
        std::printf("ERROR audit: %s\n", seen.status().ToString().c_str());
        return 3;
      }
      int64_t total = 0, negative = 0, bad = 0;
      for (const std::string& s : *seen) {
        int64_t b = 0;
        if (!LoadAccount(s, &b)) ++bad;
        if (b < 0) ++negative;
        total += b;
      }
      std::printf("AUDIT total=%ld negative=%ld bad=%ld\n", total, negative, bad);
    } else {
      std::printf("ERROR unknown command %s\n", w[0].c_str());
      return 2;
    }
  }
  node.Stop();
  std::printf("STOPPED\n");
  return rc;
}

}  // namespace
}  // namespace farm::tx::testing
