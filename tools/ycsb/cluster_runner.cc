#include "tools/ycsb/cluster_runner.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/api/node_host.h"
#include "farm/node/node.h"
#include "kv/table_node.h"
#include "tools/ycsb/farm_runner.h"
#include "tools/ycsb/workload.h"

namespace farm::ycsb {
namespace {

absl::StatusOr<std::string> ReadSecret(const std::string& path) {
  if (path.empty()) return absl::InvalidArgumentError("the cluster's secret file is required");
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read the secret file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string secret = ss.str();
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  return secret;
}

// The node's directory, removed when the run ends.
class TempDir {
 public:
  explicit TempDir(std::string path) : path_(std::move(path)) { std::filesystem::create_directories(path_); }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

absl::StatusOr<RunReport> RunClusterWorkload(const RunConfig& config, const ClusterRunOptions& options) {
  if (options.zookeeper.empty()) return absl::InvalidArgumentError("cluster: --zookeeper is required");
  if (config.threads < 1) return absl::InvalidArgumentError("at least one application thread");
  if (options.window < 1 || options.window > 1024) return absl::InvalidArgumentError("window: 1 to 1024 operations");
  absl::StatusOr<std::string> secret = ReadSecret(options.secret_file);
  if (!secret.ok()) return secret.status();
  absl::StatusOr<std::unique_ptr<CoreWorkload>> workload = CoreWorkload::Create(config.workload);
  if (!workload.ok()) return workload.status();

  TempDir dir(absl::StrCat(std::filesystem::temp_directory_path().string(), "/farm-ycsb-member-", ::getpid()));
  node::NodeOptions o;
  // Ids of storage nodes are small; one above a million, per process, stays clear of them.
  o.node_id = options.node_id != 0 ? options.node_id : 1000000 + static_cast<uint32_t>(::getpid()) % 48000;
  o.cluster = options.cluster;
  o.zookeeper = options.zookeeper;
  o.fabric = options.fabric;
  o.listen = options.listen;
  o.data_dir = dir.path();
  o.cluster_secret = *secret;
  o.threads = static_cast<uint32_t>(config.threads);
  o.compute_only = true;
  absl::StatusOr<std::unique_ptr<node::Node>> node = node::Node::Create(o);
  if (!node.ok()) return node.status();
  NodeHost host(node->get());
  kv::TableOptions table;
  table.layout.neighbourhood = options.neighbourhood;
  if (absl::Status s = table.layout.Validate(); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<kv::TableNode>> kv = kv::TableNode::Install(host, table);
  if (!kv.ok()) return kv.status();
  auto stop = [&] {
    kv->reset();  // the clients go on their threads, before the node stops
    (*node)->Stop();
  };
  if (absl::Status s = (*node)->Start(); !s.ok()) {
    stop();
    return s;
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (!host.ready() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  if (!host.ready()) {
    stop();
    return absl::UnavailableError("cluster: joined no configuration that links every member within 30 s");
  }
  if (absl::Status s = (*kv)->Open(); !s.ok()) {
    stop();
    return absl::Status(s.code(), absl::StrCat("cluster: opening the kv table: ", s.message()));
  }
  std::vector<DriverPlace> places;
  for (size_t t = 0; t < host.thread_count(); ++t) places.push_back({&host, t, &(*kv)->client(t)});
  DriverRunOptions run;
  run.backend = "cluster";
  run.window = options.window;
  run.figures = {{"app_threads", config.threads}, {"member", o.node_id}};
  run.exact_pair_count = false;
  absl::StatusOr<RunReport> report = RunDrivers(config, **workload, places, run);
  stop();
  return report;
}

}  // namespace farm::ycsb
