// Configuration: the epoch and member set every layer above works against.
//
// A Configuration is a value: built by the configuration manager (or a static member
// list), encoded into ZooKeeper, decoded and validated by every node. Decode accepts a
// configuration only if it is whole and well-formed (known format, unique sorted
// members, sane placement parameters); anything else is an error and the caller keeps
// the configuration it had, so nothing is ever half-applied.
#ifndef FARM_MEMBERSHIP_CONFIGURATION_H_
#define FARM_MEMBERSHIP_CONFIGURATION_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/base/address.h"
#include "farm/base/crc32c.h"

namespace farm::membership {

// The envelope format of every membership znode (configuration.proto).
inline constexpr uint32_t kConfigurationFormat = 1;
inline constexpr uint32_t kDefaultVirtualRings = 100;
inline constexpr uint32_t kMaxVirtualRings = 1024;
inline constexpr uint32_t kMaxReplication = 8;
// Ids above this are reserved (ZooKeeper sequence suffixes, tools).
inline constexpr NodeId kMaxNodeId = 1u << 20;

struct Member {
  NodeId id = 0;
  std::string host;
  // Backend name -> locator as Fabric::locator() prints it ("tcp:10.0.0.1:7000").
  std::map<std::string, std::string> fabric_addresses;
  std::string admin_address;
  uint64_t capacity_bytes = 0;
  uint32_t threads = 0;
  uint64_t incarnation = 0;
  uint64_t session = 0;  // ZooKeeper session of the registration: a rejoin changes it
  // Runs applications, holds no regions: placement skips it (membership/placement.h).
  bool compute_only = false;

  bool operator==(const Member&) const = default;
  // The locator for `backend`, or empty.
  std::string address(absl::string_view backend) const;
};

struct Configuration {
  std::string cluster;
  uint64_t epoch = 0;
  NodeId manager = 0;
  uint32_t replication = 1;
  uint32_t virtual_rings = kDefaultVirtualRings;
  std::vector<Member> members;  // sorted by id, unique

  bool operator==(const Configuration&) const = default;
  // The member with `id`, or null.
  const Member* Find(NodeId id) const;
  bool Contains(NodeId id) const { return Find(id) != nullptr; }
  // "epoch 7: nodes 1,2,4 (manager 1)".
  std::string Summary() const;
};

// Checks the invariants Decode enforces; Encode refuses what would not decode.
absl::Status Validate(const Configuration& config);
absl::Status ValidateMember(const Member& member);

absl::StatusOr<std::string> EncodeConfiguration(const Configuration& config);
// Errors: DataLoss for bytes that do not parse or fail the checksum,
// FailedPrecondition for an unknown format or another kind of record, InvalidArgument
// for a configuration that breaks an invariant.
absl::StatusOr<Configuration> DecodeConfiguration(absl::string_view bytes);

// CRC-32C (Castagnoli), for the envelope checksum (farm/base/crc32c.h).
using farm::Crc32c;

// A member's registration znode.
absl::StatusOr<std::string> EncodeRegistration(absl::string_view cluster, const Member& member);
absl::StatusOr<Member> DecodeRegistration(absl::string_view bytes, absl::string_view cluster);

}  // namespace farm::membership

#endif  // FARM_MEMBERSHIP_CONFIGURATION_H_
