// farm_admin: the cluster as ZooKeeper and the nodes' admin ports see it.
//
//   farm_admin --zookeeper=H:P [--cluster=farm] config      epoch, manager, members, state
//                                                          (compute: a member holding no data)
//   farm_admin --zookeeper=H:P [--cluster=farm] placement   each node's regions: primary,
//                                                           backups; primary share per node
//   farm_admin --zookeeper=H:P [--cluster=farm] stats       per-node statistics
//   farm_admin --zookeeper=H:P [--cluster=farm] storage     each node's durable log: policy,
//                                                           size, syncs, starts, last replay
//
// Exits 1 with a one-line error when ZooKeeper or the configuration cannot be read.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "farm/base/command_line.h"
#include "farm/node/admin_protocol.h"
#include "membership/configuration.h"
#include "membership/placement.h"
#include "membership/zk_client.h"
#include "membership/zk_membership.h"
#include <zookeeper/zookeeper.h>

ABSL_FLAG(std::string, zookeeper, "127.0.0.1:2181", "ZooKeeper ensemble host:port[,...].");
ABSL_FLAG(std::string, cluster, "farm", "Cluster name.");
ABSL_FLAG(uint32_t, timeout_ms, 3000, "Bound on reaching ZooKeeper and each node.");
ABSL_FLAG(uint32_t, samples, 100000, "placement: random regions sampled for the primary share.");

namespace {

using farm::membership::Configuration;
using farm::membership::Member;

struct ClusterView {
  Configuration config;
  std::map<farm::NodeId, Member> registered;  // live registrations
};

absl::StatusOr<ClusterView> ReadCluster() {
  farm::membership::ZkClient::Options o;
  o.hosts = absl::GetFlag(FLAGS_zookeeper);
  o.connect_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_timeout_ms));
  absl::StatusOr<std::unique_ptr<farm::membership::ZkClient>> zk =
      farm::membership::ZkClient::Connect(o, nullptr);
  if (!zk.ok()) return zk.status();
  const std::string cluster = absl::GetFlag(FLAGS_cluster);
  const std::string root = farm::membership::ZkMembership::Root(cluster);
  absl::StatusOr<farm::membership::ZkNodeData> data = (*zk)->Get(root + "/config", false);
  if (absl::IsNotFound(data.status())) {
    return absl::NotFoundError(absl::StrCat("cluster '", cluster, "' has no configuration in ZooKeeper at ",
                                            o.hosts));
  }
  if (!data.ok()) return data.status();
  absl::StatusOr<Configuration> config = farm::membership::DecodeConfiguration(data->data);
  if (!config.ok()) return config.status();
  ClusterView view{*config, {}};
  absl::StatusOr<std::vector<std::string>> names = (*zk)->GetChildren(root + "/members", false);
  if (!names.ok()) return names.status();
  for (const std::string& name : *names) {
    absl::StatusOr<farm::membership::ZkNodeData> reg = (*zk)->Get(root + "/members/" + name, false);
    if (!reg.ok()) continue;  // left meanwhile
    absl::StatusOr<Member> m = farm::membership::DecodeRegistration(reg->data, cluster);
    if (!m.ok()) {
      std::printf("warning: registration %s: %s\n", name.c_str(), m.status().ToString().c_str());
      continue;
    }
    view.registered[m->id] = *m;
  }
  return view;
}

absl::StatusOr<farm::node::AdminResponse> FetchStats(const Member& m) {
  farm::node::AdminRequest req;
  req.set_format(farm::node::kAdminFormat);
  req.set_command(farm::node::AdminRequest::STATS);
  return farm::node::AdminCall(m.admin_address, req,
                               absl::Milliseconds(absl::GetFlag(FLAGS_timeout_ms)));
}

int Config(const ClusterView& v) {
  const Configuration& c = v.config;
  std::printf("cluster %s  epoch %lu  manager %u  replication %u  virtual rings %u\n",
              c.cluster.c_str(), static_cast<unsigned long>(c.epoch), c.manager, c.replication,
              c.virtual_rings);
  std::printf("%-6s %-8s %-8s %-22s %-24s %s\n", "node", "state", "threads", "admin", "host",
              "fabric");
  std::map<farm::NodeId, const Member*> all;
  for (const Member& m : c.members) all[m.id] = &m;
  for (const auto& [id, m] : v.registered) all.emplace(id, &m);
  for (const auto& [id, m] : all) {
    const bool in_config = c.Contains(id);
    const bool registered = v.registered.count(id) > 0;
    const char* state = in_config && registered ? (m->compute_only ? "compute" : "member")
                        : in_config                ? "failed"
                                                   : "joining";
    std::string fabric = absl::StrJoin(m->fabric_addresses, " ",
                                       [](std::string* out, const auto& kv) { absl::StrAppend(out, kv.second); });
    std::printf("%-6u %-8s %-8u %-22s %-24s %s\n", id, state, m->threads,
                m->admin_address.c_str(), m->host.c_str(), fabric.c_str());
  }
  return 0;
}

int Placement(const ClusterView& v) {
  absl::StatusOr<farm::membership::Placement> p = farm::membership::Placement::Create(v.config);
  if (!p.ok()) {
    std::printf("error: %s\n", p.status().ToString().c_str());
    return 1;
  }
  std::printf("regions hosted (epoch %lu, r=%u):\n", static_cast<unsigned long>(v.config.epoch),
              v.config.replication);
  std::printf("%-12s %-10s %-8s %-12s %s\n", "region", "reported", "primary", "backups", "state");
  for (const Member& m : v.config.members) {
    absl::StatusOr<farm::node::AdminResponse> r = FetchStats(m);
    if (!r.ok()) {
      std::printf("%-12s node %u unreachable: %s\n", "?", m.id, r.status().ToString().c_str());
      continue;
    }
    for (const farm::node::RegionStats& region : r->stats().regions()) {
      absl::StatusOr<farm::membership::ReplicaSet> set = p->Lookup(region.id());
      if (!set.ok()) continue;
      std::string backups = absl::StrJoin(set->backups(), ",");
      // Under-replicated: backups still to receive a copy (writes wait; reads go on).
      const std::string state =
          region.copies_due().empty()
              ? (region.frozen() ? "frozen" : "ok")
              : absl::StrCat("re-replicating to ", absl::StrJoin(region.copies_due(), ","));
      std::printf("%-12u node %-5u %-8u %-12s %s\n", region.id(), m.id, set->primary(),
                  backups.empty() ? "-" : backups.c_str(), state.c_str());
    }
  }
  // How the region space divides: the share of random region ids each node is primary of.
  std::map<farm::NodeId, uint64_t> primaries;
  absl::BitGen rng;
  const uint64_t samples = absl::GetFlag(FLAGS_samples);
  const uint64_t space = uint64_t{p->positions_per_ring()} * p->virtual_rings();
  for (uint64_t i = 0; i < samples; ++i) {
    absl::StatusOr<farm::membership::ReplicaSet> set =
        p->Lookup(static_cast<farm::RegionId>(absl::Uniform<uint64_t>(rng, 0, space)));
    if (set.ok()) ++primaries[set->primary()];
  }
  std::printf("primary share over %lu random regions:\n", static_cast<unsigned long>(samples));
  for (const auto& [id, n] : primaries) {
    std::printf("  node %-5u %5.1f%%\n", id, 100.0 * static_cast<double>(n) / static_cast<double>(samples));
  }
  return 0;
}

int Stats(const ClusterView& v) {
  std::printf("%-5s %-7s %-6s %-9s %-7s %-6s %-6s %-12s %-12s %-8s %s\n", "node", "epoch", "serve",
              "session", "manager", "peers", "uptime", "msgs sent", "msgs recv", "backend",
              "last error");
  int failures = 0;
  std::vector<std::string> service_lines;
  for (const Member& m : v.config.members) {
    absl::StatusOr<farm::node::AdminResponse> r = FetchStats(m);
    if (!r.ok()) {
      std::printf("%-5u unreachable at %s: %s\n", m.id, m.admin_address.c_str(),
                  r.status().ToString().c_str());
      ++failures;
      continue;
    }
    const farm::node::NodeStats& s = r->stats();
    uint64_t sent = 0, received = 0;
    for (const auto& t : s.threads()) {
      sent += t.messages_sent();
      received += t.messages_received();
    }
    std::printf("%-5u %-7lu %-6s %-9s %-7s %-6u %-6.0f %-12lu %-12lu %-8s %s\n", s.node_id(),
                static_cast<unsigned long>(s.epoch()), s.serving() ? "yes" : "NO",
                s.session().c_str(), s.manager() ? "yes" : "", s.connected_peers(),
                s.uptime_seconds(), static_cast<unsigned long>(sent),
                static_cast<unsigned long>(received), s.backend().c_str(), s.last_error().c_str());
    for (const farm::node::ServiceStats& service : s.services()) {
      std::string line = absl::StrCat("node ", s.node_id(), "  ", service.service(), ":");
      for (const farm::node::ServiceCounter& c : service.counters()) {
        absl::StrAppend(&line, " ", c.name(), "=", c.value());
      }
      service_lines.push_back(std::move(line));
    }
  }
  // The hosted services' counters (farm_node --services), one line per node and service.
  if (!service_lines.empty()) std::printf("\n%s\n", absl::StrJoin(service_lines, "\n").c_str());
  return failures == 0 ? 0 : 2;
}

// Each node's log (farm_node --data_dir, --log_sync) and its last checkpoint.
int Storage(const ClusterView& v) {
  std::printf("%-5s %-11s %-12s %-10s %-9s %-5s %-26s %-36s %s\n", "node", "log_sync", "log bytes", "records",
              "syncs", "boot", "last replay", "last checkpoint", "log file / error");
  int failures = 0;
  for (const Member& m : v.config.members) {
    absl::StatusOr<farm::node::AdminResponse> r = FetchStats(m);
    if (!r.ok()) {
      std::printf("%-5u unreachable at %s: %s\n", m.id, m.admin_address.c_str(), r.status().ToString().c_str());
      ++failures;
      continue;
    }
    const farm::node::LogStats& l = r->stats().log();
    const std::string replay = absl::StrCat(l.replayed_records(), " rec, ", l.replayed_transactions(), " tx, ",
                                            absl::SixDigits(l.replay_seconds()), " s");
    std::string checkpoint = "none";
    if (l.has_checkpoint()) {
      checkpoint = absl::StrCat("checkpoint.", l.checkpoint_segment(), " ", l.checkpoint_bytes(), " B");
      if (l.checkpoints() > 0) {
        absl::StrAppend(&checkpoint, ", ", absl::SixDigits(l.checkpoint_age_seconds()), " s ago (",
                        l.checkpoints(), " taken)");
      }
    }
    std::string file = l.error().empty() ? l.path() : l.error();
    if (!l.checkpoint_error().empty()) absl::StrAppend(&file, "; checkpoint failed: ", l.checkpoint_error());
    std::printf("%-5u %-11s %-12lu %-10lu %-9lu %-5u %-26s %-36s %s\n", r->stats().node_id(), l.policy().c_str(),
                static_cast<unsigned long>(l.file_bytes()), static_cast<unsigned long>(l.records_written()),
                static_cast<unsigned long>(l.syncs()), l.boot(), replay.c_str(), checkpoint.c_str(), file.c_str());
  }
  return failures == 0 ? 0 : 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args =
      farm::ParseCommandLine(argc, argv, "farm_admin [--zookeeper=H:P] [--cluster=NAME] config|placement|stats|storage");
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
  const std::string command = args.size() > 1 ? args[1] : "";
  if (command != "config" && command != "placement" && command != "stats" && command != "storage") {
    std::fprintf(stderr, "usage: farm_admin [--zookeeper=H:P] [--cluster=NAME] config|placement|stats|storage\n");
    return 2;
  }
  absl::StatusOr<ClusterView> view = ReadCluster();
  if (!view.ok()) {
    std::fprintf(stderr, "farm_admin: %s\n", view.status().ToString().c_str());
    return 1;
  }
  if (command == "config") return Config(*view);
  if (command == "placement") return Placement(*view);
  if (command == "storage") return Storage(*view);
  return Stats(*view);
}
