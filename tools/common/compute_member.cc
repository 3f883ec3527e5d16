#include "tools/common/compute_member.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "farm/base/secret_file.h"
#include "farm/node/admin_protocol.h"
#include "membership/placement.h"

namespace farm::tools {
absl::StatusOr<std::unique_ptr<ComputeMember>> ComputeMember::Join(const ComputeMemberOptions& options,
                                                                   std::function<absl::Status(Host&)> before_start) {
  if (options.zookeeper.empty()) return absl::InvalidArgumentError("joining a cluster needs its --zookeeper");
  absl::StatusOr<std::string> secret = ReadSecretFile(options.secret_file, "the cluster's secret file");
  if (!secret.ok()) return secret.status();
  std::unique_ptr<ComputeMember> m(new ComputeMember());
  // A fresh directory of its own: it holds no data, and a directory named after the
  // process id may be left over from a killed process that had the same id.
  std::string dir_template = absl::StrCat(std::filesystem::temp_directory_path().string(), "/farm-member-XXXXXX");
  if (::mkdtemp(dir_template.data()) == nullptr) {
    return absl::ErrnoToStatus(errno, absl::StrCat("creating a directory for the member from ", dir_template));
  }
  m->dir_ = std::move(dir_template);
  node::NodeOptions o;
  // Ids of storage nodes are small; one above a million, per process, stays clear of them.
  o.node_id = options.node_id != 0 ? options.node_id : 1000000 + static_cast<uint32_t>(::getpid()) % 48000;
  o.cluster = options.cluster;
  o.zookeeper = options.zookeeper;
  o.fabric = options.fabric;
  o.listen = options.listen;
  o.data_dir = m->dir_;
  o.cluster_secret = *secret;
  o.threads = options.threads;
  o.compute_only = true;
  o.session_timeout = options.session_timeout;
  o.tx = options.tx;
  o.log_sync = "off";  // it holds no data: nothing to log or replay
  absl::StatusOr<std::unique_ptr<node::Node>> node = node::Node::Create(o);
  if (!node.ok()) return node.status();
  m->node_ = std::move(*node);
  m->host_ = std::make_unique<NodeHost>(m->node_.get());
  if (before_start) {
    if (absl::Status s = before_start(*m->host_); !s.ok()) return s;
  }
  if (absl::Status s = m->node_->Start(); !s.ok()) return s;
  const absl::Time give_up = absl::Now() + options.join_timeout;
  while (!m->host_->ready() && absl::Now() < give_up) absl::SleepFor(absl::Milliseconds(10));
  if (!m->host_->ready()) {
    return absl::UnavailableError(absl::StrCat("joined no configuration that links every member within ",
                                               absl::FormatDuration(options.join_timeout)));
  }
  return m;
}

ComputeMember::~ComputeMember() { Leave(); }

void ComputeMember::Leave() {
  if (node_ != nullptr) node_->Stop();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    dir_.clear();
  }
}

absl::StatusOr<std::vector<std::pair<NodeId, std::vector<RegionId>>>> ComputeMember::RegionsByPrimary() {
  std::shared_ptr<const membership::Configuration> config = node_->membership().current();
  if (config == nullptr) return absl::UnavailableError("no configuration yet");
  absl::StatusOr<membership::Placement> placement = membership::Placement::Create(*config);
  if (!placement.ok()) return placement.status();
  std::vector<std::pair<NodeId, std::vector<RegionId>>> out;
  for (const membership::Member& m : config->members) {
    if (m.compute_only) continue;
    node::AdminRequest request;
    request.set_format(node::kAdminFormat);
    request.set_command(node::AdminRequest::STATS);
    absl::StatusOr<node::AdminResponse> stats = node::AdminCall(m.admin_address, request, absl::Seconds(5));
    if (!stats.ok()) return stats.status();
    std::vector<RegionId> primary_of;
    for (const node::RegionStats& r : stats->stats().regions()) {
      absl::StatusOr<membership::ReplicaSet> rs = placement->Lookup(r.id());
      if (rs.ok() && rs->primary() == m.id) primary_of.push_back(r.id());
    }
    out.emplace_back(m.id, std::move(primary_of));
  }
  return out;
}

}  // namespace farm::tools
