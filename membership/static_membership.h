// StaticMembership: a fixed member list, epoch 1, no failure detection. For unit tests
// and single-process clusters only; the node refuses it when a ZooKeeper address is set.
#ifndef FARM_MEMBERSHIP_STATIC_MEMBERSHIP_H_
#define FARM_MEMBERSHIP_STATIC_MEMBERSHIP_H_

#include <memory>

#include "absl/status/statusor.h"
#include "membership/membership.h"

namespace farm::membership {

// Parses "ID=BACKEND:ADDRESS[;BACKEND:ADDRESS][;compute],..." e.g.
// "1=tcp:127.0.0.1:7001,2=shm:/run/2.sock,3=shm:/run/3.sock;compute" (";compute": a
// compute-only member, Member::compute_only)
// into members (threads 1, no admin address). Errors name the bad entry.
absl::StatusOr<std::vector<Member>> ParseMemberList(absl::string_view list);

class StaticMembership final : public Membership {
 public:
  // `config` must validate and contain `self`.
  static absl::StatusOr<std::unique_ptr<StaticMembership>> Create(Configuration config,
                                                                 NodeId self);

  absl::Status Start(ConfigCallback on_config) override;
  void Stop() override { gate_.Fence(); }
  std::shared_ptr<const Configuration> current() const override { return config_; }
  MembershipStatus status() const override;
  const ServingGate& gate() const override { return gate_; }

 private:
  StaticMembership(std::shared_ptr<const Configuration> config, NodeId self)
      : config_(std::move(config)), gate_(self) {}

  const std::shared_ptr<const Configuration> config_;
  ServingGate gate_;
};

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_STATIC_MEMBERSHIP_H_
