#include "tools/ycsb/cluster_runner.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kv/table_layouts.h"
#include "tools/ycsb/farm_runner.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {

absl::StatusOr<RunReport> RunClusterWorkload(const RunConfig& config, const ClusterRunOptions& options) {
  if (config.threads < 1) return absl::InvalidArgumentError("at least one application thread");
  if (options.window < 1 || options.window > 1024) return absl::InvalidArgumentError("window: 1 to 1024 operations");
  absl::StatusOr<std::unique_ptr<CoreWorkload>> workload = CoreWorkload::Create(config.workload);
  if (!workload.ok()) return workload.status();
  kv::TableOptions table;
  table.layout.neighbourhood = options.neighbourhood;
  if (absl::Status s = table.layout.Validate(); !s.ok()) return s;
  if (absl::Status s = kv::ValidateLayout(options.layout); !s.ok()) return s;

  tools::ComputeMemberOptions o = options.member;
  o.threads = static_cast<uint32_t>(config.threads);
  std::unique_ptr<kv::KvTable> kv;
  absl::StatusOr<std::unique_ptr<tools::ComputeMember>> member =
      tools::ComputeMember::Join(o, [&](Host& host) -> absl::Status {
        absl::StatusOr<std::unique_ptr<kv::KvTable>> installed =
            kv::InstallKvTable(host, kv::KvTableOptions{options.layout, table});
        if (!installed.ok()) return installed.status();
        kv = std::move(*installed);
        return absl::OkStatus();
      });
  if (!member.ok()) {
    kv.reset();
    return absl::Status(member.status().code(), absl::StrCat("cluster: ", member.status().message()));
  }
  Host& host = (*member)->host();
  if (absl::Status s = kv->Open(); !s.ok()) {
    kv.reset();  // the clients go on their threads, before the node stops
    return absl::Status(s.code(), absl::StrCat("cluster: opening the kv table: ", s.message()));
  }
  std::vector<DriverPlace> places;
  for (size_t t = 0; t < host.thread_count(); ++t) places.push_back({&host, t, &kv->client(t)});
  DriverRunOptions run;
  run.backend = "cluster";
  run.window = options.window;
  run.figures = {{"app_threads", config.threads}, {"member", host.self()}};
  run.exact_pair_count = false;
  absl::StatusOr<RunReport> report = RunDrivers(config, **workload, places, run);
  kv.reset();
  (*member)->Leave();
  return report;
}

}  // namespace farm::ycsb
