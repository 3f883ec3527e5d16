// fabric_bench: the paper's Figure 2/3 micro-benchmark on this machine.
//
// A server process owns a region; this process reads blocks of 16 B..8 KB at random
// offsets with one-sided READs and with ring-buffer RPCs, on each fabric backend, and
// with a plain TCP request/response server in the same run as the baseline. Rates use a
// window of requests in flight; latencies are one request at a time. Phases write, cas
// and faa measure one-sided WRITEs and 8-byte atomics the same way (tests/softroce's
// verbs comparison uses them next to perftest).
//
//   fabric_bench [--backends=shm,tcp] [--sizes=16,64,...] [--seconds=0.5] [--window=16]
//                [--phases=read,rpc,tcp,write,cas,faa] [--rdma_devices=rxe0,rxe1]
#include <signal.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "farm/base/command_line.h"
#include "tools/common/subprocess.h"
#include "tools/fabric_bench/bench_server.h"
#include "tools/fabric_bench/farm_measure.h"
#include "tools/fabric_bench/tcp_baseline.h"

ABSL_FLAG(std::vector<std::string>, backends, (std::vector<std::string>{"shm", "tcp"}),
          "fabric backends to measure");
ABSL_FLAG(std::vector<std::string>, sizes,
          (std::vector<std::string>{"16", "64", "256", "512", "1024", "2048", "4096", "8192"}),
          "block sizes in bytes");
ABSL_FLAG(double, seconds, 0.3, "duration of each measurement");
ABSL_FLAG(std::vector<std::string>, phases, (std::vector<std::string>{"read", "rpc", "tcp"}),
          "what to measure: read (one-sided READs), rpc (ring RPCs), tcp (the baseline), "
          "write (one-sided WRITEs), cas and faa (8-byte atomics)");
ABSL_FLAG(std::vector<std::string>, rdma_devices, {},
          "verbs: the server's RDMA device, then the client's (default: the first active one)");
ABSL_FLAG(int, window, 16, "requests in flight when measuring rates");
ABSL_FLAG(int, repeat, 5, "measure each figure this many times and report the median run");
ABSL_FLAG(int, region_mb, 64, "size of the server's region, read at random offsets");
ABSL_FLAG(int, spin_us, 10000, "event loops spin this long before parking");
ABSL_FLAG(bool, yield, true, "spinning event loops yield the core between empty polls");
ABSL_FLAG(bool, serve, false, "internal: run as the server process");
ABSL_FLAG(std::string, backend, "", "internal: the server's backend");
ABSL_FLAG(std::string, device, "", "internal: the server's RDMA device");
ABSL_FLAG(bool, baseline, false, "internal: the server also runs the TCP baseline");

namespace farm::bench {
namespace {

}  // namespace

EventLoopOptions LoopOptionsFromFlags() {
  EventLoopOptions o;
  o.spin = absl::Microseconds(absl::GetFlag(FLAGS_spin_us));
  o.yield_while_spinning = absl::GetFlag(FLAGS_yield);
  return o;
}

namespace {

struct Server {
  Subprocess process;
  std::string locator;
  RegionCapability capability;
  uint16_t baseline_port = 0;
};

// The RDMA device of the server (0) or the client (1).
std::string RdmaDevice(size_t who) {
  const std::vector<std::string> devices = absl::GetFlag(FLAGS_rdma_devices);
  return devices.empty() ? "" : devices[who % devices.size()];
}

absl::StatusOr<Server> SpawnServer(const std::string& backend, bool baseline) {
  absl::StatusOr<Subprocess> p = Subprocess::Spawn(
      {"/proc/self/exe", "--serve", absl::StrCat("--backend=", backend),
       absl::StrCat("--device=", RdmaDevice(0)),
       absl::StrCat("--baseline=", baseline ? "true" : "false"),
       absl::StrCat("--region_mb=", absl::GetFlag(FLAGS_region_mb)),
       absl::StrCat("--spin_us=", absl::GetFlag(FLAGS_spin_us)),
       absl::StrCat("--yield=", absl::GetFlag(FLAGS_yield) ? "true" : "false")});
  if (!p.ok()) return p.status();
  absl::StatusOr<std::string> ready = p->ReadLineStartingWith("READY", absl::Seconds(30));
  if (!ready.ok()) return ready.status();
  std::vector<std::string> parts = absl::StrSplit(*ready, ' ');
  absl::StatusOr<RegionCapability> cap =
      parts.size() == 4 ? DecodeCapability(parts[2]) : absl::InvalidArgumentError(*ready);
  uint32_t port = 0;
  if (!cap.ok() || !absl::SimpleAtoi(parts[3], &port)) {
    return absl::InternalError(absl::StrCat("bad READY line: ", *ready));
  }
  return Server{std::move(*p), parts[1], *cap, static_cast<uint16_t>(port)};
}

std::string Kops(const Measurement& m) { return absl::StrFormat("%.0f", m.ops_per_second / 1e3); }
std::string Us(double us) { return absl::StrFormat("%.1f", us); }

int Run() {
  std::vector<uint32_t> sizes;
  for (const std::string& s : absl::GetFlag(FLAGS_sizes)) {
    uint32_t v;
    if (!absl::SimpleAtoi(s, &v) || v == 0 || v > (1u << 20)) {
      std::fprintf(stderr, "bad size '%s'\n", s.c_str());
      return 2;
    }
    sizes.push_back(v);
  }
  const std::vector<std::string> backends = absl::GetFlag(FLAGS_backends);
  const absl::Duration duration = absl::Seconds(absl::GetFlag(FLAGS_seconds));
  const int window = absl::GetFlag(FLAGS_window);
  const uint64_t region_bytes = uint64_t(absl::GetFlag(FLAGS_region_mb)) << 20;
  const EventLoopOptions loop = LoopOptionsFromFlags();
  auto fail = [](const absl::Status& s) {
    std::fprintf(stderr, "fabric_bench: %s\n", s.ToString().c_str());
    return 1;
  };

  std::map<std::string, Server> servers;
  for (size_t i = 0; i < backends.size(); ++i) {
    absl::StatusOr<Server> s = SpawnServer(backends[i], i == 0);
    if (!s.ok()) return fail(s.status());
    servers.emplace(backends[i], std::move(*s));
  }
  // results[column][size]
  std::map<std::string, std::map<uint32_t, Measurement>> results;
  std::vector<std::string> columns;
  auto measure_sizes = [&](const std::string& column, const std::vector<uint32_t>& column_sizes,
                           const std::function<absl::StatusOr<Measurement>(uint32_t)>& measure) {
    columns.push_back(column);
    for (uint32_t size : column_sizes) {
      std::vector<Measurement> runs;
      for (int r = 0; r < std::max(1, absl::GetFlag(FLAGS_repeat)); ++r) {
        absl::StatusOr<Measurement> run = measure(size);
        if (!run.ok()) return run.status();
        runs.push_back(*run);
      }
      // The run with the median rate stands for the figure (shared VMs are noisy).
      std::sort(runs.begin(), runs.end(), [](const Measurement& a, const Measurement& b) {
        return a.ops_per_second < b.ops_per_second;
      });
      const Measurement* m = &runs[runs.size() / 2];
      results[column][size] = *m;
      std::fprintf(stderr, "%s %u B: %s kops/s, p50 %s us\n", column.c_str(), size,
                   Kops(*m).c_str(), Us(m->p50_us).c_str());
    }
    return absl::OkStatus();
  };
  auto measure_column = [&](const std::string& column,
                            const std::function<absl::StatusOr<Measurement>(uint32_t)>& measure) {
    return measure_sizes(column, sizes, measure);
  };
  const std::vector<std::string> phases = absl::GetFlag(FLAGS_phases);
  auto wanted = [&](absl::string_view phase) {
    return std::find(phases.begin(), phases.end(), phase) != phases.end();
  };
  struct OneSidedPhase {
    const char* phase;
    const char* column;
    Opcode op;
  };
  constexpr OneSidedPhase kOneSided[] = {{"read", "READ", Opcode::kRead},
                                         {"write", "WRITE", Opcode::kWrite},
                                         {"cas", "CAS", Opcode::kCompareSwap},
                                         {"faa", "FETCH_ADD", Opcode::kFetchAdd}};
  std::vector<std::string> atomic_columns;
  for (const std::string& b : backends) {
    if (!wanted("read") && !wanted("write") && !wanted("cas") && !wanted("faa")) break;
    absl::StatusOr<std::unique_ptr<OneSidedClient>> client = OneSidedClient::Connect(
        b, RdmaDevice(1), servers.at(b).locator, servers.at(b).capability);
    if (!client.ok()) return fail(client.status());
    for (const OneSidedPhase& p : kOneSided) {
      if (!wanted(p.phase)) continue;
      const bool atomic = p.op == Opcode::kCompareSwap || p.op == Opcode::kFetchAdd;
      const std::string column = absl::StrCat(p.column, " ", b);
      if (atomic) atomic_columns.push_back(column);
      absl::Status s = measure_sizes(column, atomic ? std::vector<uint32_t>{8} : sizes,
                                     [&](uint32_t size) {
                                       return (*client)->Measure(p.op, size, window, duration);
                                     });
      if (!s.ok()) return fail(s);
    }
  }
  for (const std::string& b : backends) {
    if (!wanted("rpc")) break;
    absl::StatusOr<std::unique_ptr<RpcReader>> rpc =
        RpcReader::Connect(b, RdmaDevice(1), servers.at(b).locator, region_bytes, loop);
    if (!rpc.ok()) return fail(rpc.status());
    absl::Status s = measure_column("RPC " + b, [&](uint32_t size) {
      return (*rpc)->Measure(size, window, duration);
    });
    if (!s.ok()) return fail(s);
  }
  if (wanted("tcp")) {
    const uint16_t port = servers.at(backends.front()).baseline_port;
    absl::Status s = measure_column("TCP socket", [&](uint32_t size) {
      return MeasureTcpBaseline(port, size, region_bytes, window, duration);
    });
    if (!s.ok()) return fail(s);
  }
  std::vector<Measurement> raw_runs;
  for (int r = 0; wanted("read") && r < std::max(1, absl::GetFlag(FLAGS_repeat)); ++r) {
    raw_runs.push_back(MeasureRawCopy(64, region_bytes, duration));
  }
  std::sort(raw_runs.begin(), raw_runs.end(), [](const Measurement& a, const Measurement& b) {
    return a.ops_per_second < b.ops_per_second;
  });
  const Measurement raw64 = raw_runs.empty() ? Measurement{} : raw_runs[raw_runs.size() / 2];

  utsname u;
  ::uname(&u);
  std::printf("fabric_bench: random %u-MB-region block reads from a server process; rate with %d "
              "in flight, latency one at a time; median of %d runs of %.2f s; loops spin %d us%s; "
              "%ld cores, "
              "Linux %s\n\n",
              absl::GetFlag(FLAGS_region_mb), window, std::max(1, absl::GetFlag(FLAGS_repeat)),
              absl::ToDoubleSeconds(duration),
              absl::GetFlag(FLAGS_spin_us), absl::GetFlag(FLAGS_yield) ? " yielding" : "",
              ::sysconf(_SC_NPROCESSORS_ONLN), u.release);
  std::string header = "| size (B) |";
  std::string rule = "|---:|";
  std::vector<std::string> block_columns;
  for (const std::string& c : columns) {
    if (std::find(atomic_columns.begin(), atomic_columns.end(), c) == atomic_columns.end()) {
      block_columns.push_back(c);
    }
  }
  for (const std::string& c : block_columns) {
    header += absl::StrCat(" ", c, " kops/s | p50 µs | p99 µs |");
    rule += "---:|---:|---:|";
  }
  const bool ratios = wanted("rpc") && wanted("tcp");
  for (const std::string& b : backends) {
    if (!ratios) break;
    header += absl::StrCat(" RPC ", b, " / TCP |");
    rule += "---:|";
  }
  std::printf("%s\n%s\n", header.c_str(), rule.c_str());
  for (uint32_t size : sizes) {
    std::string row = absl::StrCat("| ", size, " |");
    for (const std::string& c : block_columns) {
      const Measurement& m = results[c][size];
      row += absl::StrCat(" ", Kops(m), " | ", Us(m.p50_us), " | ", Us(m.p99_us), " |");
    }
    for (const std::string& b : backends) {
      if (!ratios) break;
      row += absl::StrFormat(" %.1fx |", results["RPC " + b][size].ops_per_second /
                                             results["TCP socket"][size].ops_per_second);
    }
    std::printf("%s\n", row.c_str());
  }
  if (!atomic_columns.empty()) {
    std::printf("\n| 8-byte atomic | kops/s | p50 µs | p99 µs |\n|---|---:|---:|---:|\n");
    for (const std::string& c : atomic_columns) {
      const Measurement& m = results[c][8];
      std::printf("| %s | %s | %s | %s |\n", c.c_str(), Kops(m).c_str(), Us(m.p50_us).c_str(),
                  Us(m.p99_us).c_str());
    }
  }
  if (results.contains("READ shm") && results["READ shm"].contains(64)) {
    const Measurement& read = results["READ shm"][64];
    std::printf("\n64 B at random offsets: raw memcpy from a local mapping %.0f ns/copy (%.1f Mops/s); "
                "one-sided READ over shm %.0f ns/op at %d in flight (%.1f Mops/s), p50 %.2f µs one at "
                "a time: %.1fx the raw copy's time\n",
                raw64.p50_us * 1e3, raw64.ops_per_second / 1e6, 1e9 / read.ops_per_second, window,
                read.ops_per_second / 1e6, read.p50_us, raw64.ops_per_second / read.ops_per_second);
  }
  for (auto& [name, server] : servers) server.process.Kill(SIGTERM);
  return 0;
}

}  // namespace
}  // namespace farm::bench

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv, "Measures one-sided READs and ring-buffer RPCs against a plain TCP baseline.");
  if (absl::GetFlag(FLAGS_serve)) {
    farm::bench::ServerOptions o;
    o.backend = absl::GetFlag(FLAGS_backend);
    o.device = absl::GetFlag(FLAGS_device);
    o.region_bytes = uint64_t(absl::GetFlag(FLAGS_region_mb)) << 20;
    o.loop = farm::bench::LoopOptionsFromFlags();
    o.tcp_baseline = absl::GetFlag(FLAGS_baseline);
    return farm::bench::RunServer(o);
  }
  return farm::bench::Run();
}
