#include "tests/kv/kv_cluster.h"

#include <unistd.h>

#include <utility>

#include "gtest/gtest.h"
#include "tests/support/fabric_test_util.h"

namespace farm::kv::testing {

absl::StatusOr<std::unique_ptr<KvCluster>> KvCluster::Start(const std::string& backend, int nodes,
                                                            const std::string& name,
                                                            KvTableOptions options, uint32_t replication) {
  InProcessClusterOptions o;
  o.backend = backend;
  o.nodes = nodes;
  o.rdma_devices = farm::testing::TestVerbsDevices();
  o.replication = replication;
  std::string layout = options.layout.substr(0, options.layout.find(':'));
  o.dir = ::testing::TempDir() + name + "_" + layout + "_" + backend + "_" + std::to_string(::getpid());
  absl::StatusOr<std::unique_ptr<LocalKvCluster>> kv = LocalKvCluster::Start(o, options);
  if (!kv.ok()) return kv.status();
  return std::unique_ptr<KvCluster>(new KvCluster(std::move(*kv)));
}

absl::Status KvCluster::Put(NodeId on, const std::string& key, const std::string& value) {
  absl::StatusOr<KeyOpResult> r = Update(on, OpKind::kPut, key, value);
  if (!r.ok()) return r.status();
  return r->status;
}

absl::StatusOr<std::optional<std::string>> KvCluster::Get(NodeId on, const std::string& key) {
  using Result = absl::StatusOr<std::optional<std::string>>;
  return kv_->Run<Result>(on, 0, [key](KvClient& c, auto finish) {
    c.Get(key, [finish = std::move(finish)](absl::StatusOr<std::optional<absl::string_view>> r) mutable {
      if (!r.ok()) return finish(r.status());
      if (!r->has_value()) return finish(std::optional<std::string>());
      finish(std::optional<std::string>(std::string(**r)));
    });
  });
}

absl::StatusOr<bool> KvCluster::Remove(NodeId on, const std::string& key) {
  absl::StatusOr<KeyOpResult> r = Update(on, OpKind::kRemove, key, "");
  if (!r.ok()) return r.status();
  return r->existed;
}

absl::StatusOr<KeyOpResult> KvCluster::Update(NodeId on, OpKind kind, const std::string& key,
                                              const std::string& value, int64_t delta) {
  return kv_->Run<absl::StatusOr<KeyOpResult>>(on, 0, [kind, key, value, delta](KvClient& c, auto finish) {
    c.Update(kind, key, value, delta, std::move(finish));
  });
}

absl::StatusOr<TableScan> KvCluster::Scan(NodeId on) {
  return kv_->Run<absl::StatusOr<TableScan>>(on, 0, [](KvClient& c, auto finish) { c.Scan(std::move(finish)); });
}

absl::StatusOr<KeyPage> KvCluster::ScanKeys(NodeId on, uint64_t cursor, uint32_t count, size_t t) {
  return kv_->Run<absl::StatusOr<KeyPage>>(
      on, t, [cursor, count](KvClient& c, auto finish) { c.ScanKeys(cursor, count, std::move(finish)); });
}

}  // namespace farm::kv::testing
