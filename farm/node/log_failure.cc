// Node's fail-stop when its log fails for good (node.h, NodeOptions::on_log_failure):
// a node that cannot log holds no replicas, so it leaves the cluster at once.
#include <thread>

#include "absl/status/status.h"
#include "farm/base/log.h"
#include "farm/node/node.h"

namespace farm::node {

void Node::LeaveOnLogFailure(const absl::Status& failure) {
  MutexLock lock(&fail_stop_mu_);
  if (log_failure_.ok()) log_failure_ = failure;  // heard while stopping too
  if (fail_stop_closed_ || fail_stop_.joinable()) return;
  fail_stop_ = std::thread([this, failure] {
    FARM_LOG(kError, "node %u: the log failed (%s): leaving the cluster (a node that cannot log holds no replicas)",
             options_.node_id, failure.ToString());
    membership_->Stop();
    if (options_.on_log_failure) options_.on_log_failure(failure);
  });
}

absl::Status Node::log_failure() const {
  {
    MutexLock lock(&fail_stop_mu_);
    if (!log_failure_.ok()) return log_failure_;
  }
  // Failed before the node listened (its start record), or never heard (no Start).
  return storage_ != nullptr ? storage_->LogStatus() : absl::OkStatus();
}

}  // namespace farm::node
