// farm_node: runs one FaRM node, hosting the applications named by --services (kv: the
// key-value store; graph: the graph store), both served over RESP on the node's port,
// --resp_listen (the graph also on a port of its own with --graph_listen). Every flag
// can also come from a
// file with --flagfile=PATH (one --flag=value per line; see
// deploy/farm-node.conf.example). Exits 0 after SIGTERM or SIGINT (services stopped,
// leaving the cluster cleanly), non-zero with a one-line error when the node or a
// service cannot start (1; 2 for bad flags), and 3 when its log failed for good (a failed
// sync: the node leaves the cluster at once, the others fail over its regions).
#include <signal.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "farm/base/command_line.h"
#include "farm/base/log.h"
#include "farm/base/secret_file.h"
#include "farm/api/node_host.h"
#include "farm/api/service.h"
#include "farm/node/node.h"
#include "farm/node/test_faults.h"
#include "graph/resp/graph_service.h"
#include "kv/resp/kv_service.h"
#include "kv/table_layouts.h"

ABSL_FLAG(uint32_t, node_id, 0, "This node's id, 1..1048576, unique in the cluster (required).");
ABSL_FLAG(std::string, cluster, "farm", "Cluster name: the ZooKeeper namespace /farm/<cluster>.");
ABSL_FLAG(std::string, zookeeper, "",
          "ZooKeeper ensemble host:port[,host:port...]. Exclusive with --members.");
ABSL_FLAG(std::string, members, "",
          "Static member list instead of ZooKeeper (tests, single-host clusters): "
          "ID=BACKEND:ADDRESS[;compute],... e.g. 1=tcp:127.0.0.1:7001,2=tcp:127.0.0.1:7002 "
          "(;compute marks a compute-only member).");
ABSL_FLAG(std::string, fabric, "auto",
          "Fabric backend: auto (verbs when an RDMA device has an active port, else shm when "
          "every member is on this host, else tcp; the choice is logged), shm, tcp or verbs.");
ABSL_FLAG(std::string, listen, "127.0.0.1:0",
          "tcp fabric (or verbs control socket) listen address host:port (an address peers "
          "can reach; port 0 picks one).");
ABSL_FLAG(std::string, rdma_device, "",
          "verbs: the RDMA device to use (e.g. mlx5_0, rxe0); default the first active one.");
ABSL_FLAG(std::string, admin_listen, "127.0.0.1:0",
          "Admin port host:port for farm_admin (read-only, unauthenticated: keep on loopback "
          "or a trusted network).");
ABSL_FLAG(std::string, data_dir, "",
          "Node state directory (default ./farm-data/node-<id>): its log, replayed at the next start.");
ABSL_FLAG(std::string, log_sync, "always",
          "When a commit is acknowledged: always (after fdatasync; many commits per sync), "
          "interval:MS (before the sync, synced every MS: a machine crash loses at most MS of "
          "acknowledged commits, a process crash none), none (never synced: cache mode), off "
          "(no log: nothing survives a restart).");
ABSL_FLAG(int64_t, checkpoint_mb, 256,
          "Checkpoint the log (in the background) once the log segments since the last checkpoint hold this "
          "many MiB, or as many as that checkpoint if it is larger; the replaced files are removed, so the data "
          "directory stays about three times the data. 0: never (the log grows without bound).");
ABSL_FLAG(int64_t, checkpoint_kb, 0, "Test knob: as --checkpoint_mb, in KiB (overrides it when > 0).");
ABSL_FLAG(std::string, secret_file, "",
          "File holding the cluster secret (>= 16 bytes), shared by all members (required).");
ABSL_FLAG(std::string, host_id, "",
          "This machine's identity for shm eligibility (default: hostname and network namespace).");
ABSL_FLAG(uint32_t, threads, 2, "Worker threads.");
ABSL_FLAG(uint32_t, region_mb, 2048,
          "Region size in MB (reserved sparse; memory is used as touched).");
ABSL_FLAG(uint64_t, capacity_mb, 0,
          "MB of regions this node may be primary of (whole regions; default: one region).");
ABSL_FLAG(uint32_t, min_members, 1,
          "Create this node's first region (and start its services) only once a configuration has "
          "this many members that hold data: a cluster started node by node then places its "
          "first regions on all of them (deploy/local-cluster passes its node count).");
ABSL_FLAG(bool, compute_only, false,
          "Join as a member that runs the services but holds no regions (needs --zookeeper): "
          "it joining or leaving moves no data; e.g. a RESP front end with --services=kv.");
ABSL_FLAG(uint32_t, replication, 3,
          "Replicas per region (primary + backups); fixed by the cluster's first configuration.");
ABSL_FLAG(uint32_t, virtual_rings, 100,
          "Consistent-hashing rings; fixed by the cluster's first configuration.");
ABSL_FLAG(uint32_t, session_timeout_ms, 4000,
          "ZooKeeper session timeout: a node silent this long is removed from the configuration "
          "and fences itself.");
ABSL_FLAG(uint32_t, zk_connect_timeout_ms, 10000, "Give up reaching ZooKeeper after this long.");
ABSL_FLAG(uint32_t, join_timeout_ms, 30000,
          "Give up when no configuration includes this node after this long.");
ABSL_FLAG(bool, readable_commits, true,
          "Single-machine commits stay readable by lock-free lookups (the old values) until "
          "they apply; false: exclusive from validation on, as in FaRM (for comparison).");
ABSL_FLAG(std::string, test_fault, "",
          "Tests only: fault seams to switch on, comma-separated (farm/node/test_faults.h), e.g. "
          "single-machine-crash. Empty: none.");
ABSL_FLAG(uint32_t, spin_us, 5,
          "Event loops poll this long (microseconds) after their last event, then park. Short suits "
          "processes that share cores; longer saves wake-ups on cores of their own.");
ABSL_FLAG(std::string, services, "",
          "Applications this node hosts, comma-separated: kv (the key-value store over RESP), "
          "graph (Tao on FaRM: NODE.* and LINK.* over RESP). Empty: none.");
ABSL_FLAG(std::string, resp_listen, "127.0.0.1:0",
          "The node's RESP port, host:port (loopback by default; port 0 picks one, logged): "
          "the kv store's commands and the graph's (NODE.*, LINK.*), whichever the node hosts.");
ABSL_FLAG(std::string, resp_password_file, "",
          "kv: file holding the password RESP clients must AUTH with (empty: no AUTH).");
ABSL_FLAG(std::string, kv_layout, "hopscotch",
          "kv: table layout, the same on every node: hopscotch (FaRM's, the default), linear "
          "(linear probing with a model-chosen READ size; linear:R=8 for a fixed one), chained "
          "(Mercury's chained table, expanding as it fills) or cuckoo (Nessie's, one-sided "
          "operations only; no MULTI/EXEC). See kv/table_layouts.h.");
ABSL_FLAG(uint64_t, kv_buckets, 1 << 16,
          "kv: hashtable buckets this node allocates (other layouts: as many pair slots, kv_buckets * H/2).");
ABSL_FLAG(uint32_t, kv_neighbourhood, 8, "kv: hashtable neighbourhood H (the same on every node).");
ABSL_FLAG(std::string, graph_listen, "",
          "graph: a RESP port of the graph's own as well, host:port (port 0 picks one, logged). "
          "Empty (the default): the graph is served on the node's RESP port (--resp_listen) only.");
ABSL_FLAG(uint64_t, graph_index_buckets, 1 << 16,
          "graph: id index buckets this node allocates (4 ids each; the index grows past them "
          "by chains).");

namespace {

// The services --services names, created on the node's host (before it starts). The
// node's RESP port (--resp_listen) serves every service's commands: the kv sessions
// answer the graph's through its command extension when both run. The graph is added
// first, so it opens before the kv port serves its commands and stops after.
absl::Status AddServices(farm::Host& host, farm::ServiceSet& services) {
  bool kv = false;
  bool graph = false;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_services), ',', absl::SkipEmpty())) {
    bool* wanted = name == "kv" ? &kv : name == "graph" ? &graph : nullptr;
    if (wanted == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("unknown service '", name, "' (known: kv, graph)"));
    }
    if (*wanted) return absl::InvalidArgumentError(absl::StrCat("--services names ", name, " twice"));
    *wanted = true;
  }
  std::shared_ptr<farm::resp::CommandExtension> graph_commands;
  if (graph) {
    farm::graph::GraphServiceOptions o;
    o.graph.index_buckets_per_node = absl::GetFlag(FLAGS_graph_index_buckets);
    o.resp.listen = absl::GetFlag(FLAGS_graph_listen);
    if (o.resp.listen.empty() && !kv) o.resp.listen = absl::GetFlag(FLAGS_resp_listen);
    absl::StatusOr<std::unique_ptr<farm::graph::GraphService>> service = farm::graph::GraphService::Create(host, o);
    if (!service.ok()) return service.status();
    graph_commands = (*service)->command_extension();
    if (absl::Status s = services.Add(std::move(*service)); !s.ok()) return s;
  }
  if (!kv) return absl::OkStatus();
  farm::kv::KvServiceOptions o;
  o.layout = absl::GetFlag(FLAGS_kv_layout);
  if (absl::Status s = farm::kv::ValidateLayout(o.layout); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--kv_layout: ", s.message()));
  }
  o.table.buckets_per_node = absl::GetFlag(FLAGS_kv_buckets);
  o.table.layout.neighbourhood = absl::GetFlag(FLAGS_kv_neighbourhood);
  o.resp.listen = absl::GetFlag(FLAGS_resp_listen);
  o.resp.extension = std::move(graph_commands);
  if (const std::string file = absl::GetFlag(FLAGS_resp_password_file); !file.empty()) {
    absl::StatusOr<std::string> password = farm::ReadSecretFile(file, "--resp_password_file");
    if (!password.ok()) return password.status();
    if (password->empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--resp_password_file ", file, " is empty"));
    }
    o.resp.password = *password;
  }
  absl::StatusOr<std::unique_ptr<farm::kv::KvService>> service = farm::kv::KvService::Create(host, o);
  if (!service.ok()) return service.status();
  return services.Add(std::move(*service));
}

// Exit status of a node that stopped because its log failed (1: a start-up error;
// 2: bad flags).
constexpr int kExitLogFailed = 3;

}  // namespace

int main(int argc, char** argv) {
  farm::ParseCommandLine(argc, argv,
                         "Runs one FaRM node.\n  farm_node --node_id=N --secret_file=F "
                         "(--zookeeper=H:P | --members=LIST) "
                         "[flags]\n  farm_node --flagfile=/etc/farm/farm-node.conf");
  zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);  // the C client logs every connection at INFO

  // Block the stop signals in every thread; the main thread waits for them below.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, farm::node::TestFaults::kTriggerSignal);  // a test seam's trigger
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const uint32_t id = absl::GetFlag(FLAGS_node_id);
  auto fail = [id](const absl::Status& s) {
    FARM_LOG(kError, "farm_node %u: %s", id, s.ToString());
    return 1;
  };
  // Non-zero, and not 1, so that a supervisor does not restart it onto the same disk:
  // the data directory's log is not to be trusted until the disk is checked.
  auto log_failed = [id](const absl::Status& s) {
    FARM_LOG(kError, "node %u: stopped: its log failed: %s", id, s.ToString());
    return kExitLogFailed;
  };
  absl::StatusOr<std::string> secret = farm::ReadSecretFile(absl::GetFlag(FLAGS_secret_file));
  if (!secret.ok()) return fail(secret.status());

  farm::node::NodeOptions o;
  o.node_id = id;
  o.cluster = absl::GetFlag(FLAGS_cluster);
  o.zookeeper = absl::GetFlag(FLAGS_zookeeper);
  o.static_members = absl::GetFlag(FLAGS_members);
  o.fabric = absl::GetFlag(FLAGS_fabric);
  o.listen = absl::GetFlag(FLAGS_listen);
  o.rdma_device = absl::GetFlag(FLAGS_rdma_device);
  o.admin_listen = absl::GetFlag(FLAGS_admin_listen);
  o.data_dir = absl::GetFlag(FLAGS_data_dir);
  o.log_sync = absl::GetFlag(FLAGS_log_sync);
  if (absl::GetFlag(FLAGS_checkpoint_mb) < 0 || absl::GetFlag(FLAGS_checkpoint_kb) < 0) {
    std::fprintf(stderr, "farm_node: --checkpoint_mb and --checkpoint_kb must not be negative\n");
    return 2;
  }
  o.checkpoint_bytes = absl::GetFlag(FLAGS_checkpoint_kb) > 0
                           ? static_cast<uint64_t>(absl::GetFlag(FLAGS_checkpoint_kb)) << 10
                           : static_cast<uint64_t>(absl::GetFlag(FLAGS_checkpoint_mb)) << 20;
  o.cluster_secret = *secret;
  o.host_id = absl::GetFlag(FLAGS_host_id);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.region_bytes = uint64_t{absl::GetFlag(FLAGS_region_mb)} << 20;
  o.capacity_bytes = absl::GetFlag(FLAGS_capacity_mb) << 20;
  o.compute_only = absl::GetFlag(FLAGS_compute_only);
  o.min_members = absl::GetFlag(FLAGS_min_members);
  o.replication = absl::GetFlag(FLAGS_replication);
  o.virtual_rings = absl::GetFlag(FLAGS_virtual_rings);
  o.session_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_session_timeout_ms));
  o.connect_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_zk_connect_timeout_ms));
  o.join_timeout = absl::Milliseconds(absl::GetFlag(FLAGS_join_timeout_ms));
  o.spin = absl::Microseconds(absl::GetFlag(FLAGS_spin_us));
  o.tx.readable_commits = absl::GetFlag(FLAGS_readable_commits);
  // The node has left the cluster already (node.h): wake the wait below to stop it.
  o.on_log_failure = [](const absl::Status&) { ::kill(::getpid(), SIGTERM); };
  absl::StatusOr<std::unique_ptr<farm::node::TestFaults>> faults =
      farm::node::SetTestFaults(absl::GetFlag(FLAGS_test_fault), &o);
  if (!faults.ok()) {
    std::fprintf(stderr, "farm_node: --test_fault: %s\n", std::string(faults.status().message()).c_str());
    return 2;
  }
  if (!absl::GetFlag(FLAGS_test_fault).empty()) {
    FARM_LOG(kWarning, "node %u: test fault '%s' is on (tests only)", id, absl::GetFlag(FLAGS_test_fault));
  }

  absl::StatusOr<std::unique_ptr<farm::node::Node>> node = farm::node::Node::Create(o);
  if (!node.ok()) return fail(node.status());
  farm::NodeHost host(node->get());
  farm::ServiceSet services(host);
  if (absl::Status s = AddServices(host, services); !s.ok()) return fail(s);
  if (absl::Status s = (*node)->Start(); !s.ok()) {
    (*node)->Stop();
    if (!(*node)->log_failure().ok()) return log_failed((*node)->log_failure());
    return fail(s);
  }
  if (absl::Status s = services.StartAll(); !s.ok()) {
    services.StopAll();
    (*node)->Stop();
    if (!(*node)->log_failure().ok()) return log_failed((*node)->log_failure());
    return fail(s);
  }
  FARM_LOG(kInfo, "node %u: ready; admin port %s, fabric %s", id, (*node)->admin_address(),
           (*node)->fabric().locator());
  int sig = 0;
  for (;;) {
    sigwait(&stop_signals, &sig);
    if (sig != farm::node::TestFaults::kTriggerSignal) break;
    if ((*faults)->Trigger()) {
      FARM_LOG(kWarning, "node %u: test fault triggered: every sync fails from now on", id);
    } else {
      FARM_LOG(kWarning, "node %u: signal %d ignored (no test fault waits for it)", id, sig);
    }
  }
  if ((*node)->log_failure().ok()) FARM_LOG(kInfo, "node %u: signal %d, leaving the cluster", id, sig);
  services.StopAll();
  (*node)->Stop();
  // A failure while stopping counts too (the last records' sync).
  if (!(*node)->log_failure().ok()) return log_failed((*node)->log_failure());
  return 0;
}
