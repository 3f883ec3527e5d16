#include "membership/configuration.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "membership/configuration.pb.h"

namespace farm::membership {
namespace {

// ZooKeeper refuses znodes over 1 MB; stay well inside.
constexpr size_t kMaxEncodedBytes = 512u << 10;

void ToProto(const Member& m, MemberProto* p) {
  p->set_node_id(m.id);
  p->set_host(m.host);
  for (const auto& [backend, address] : m.fabric_addresses) {
    (*p->mutable_fabric_addresses())[backend] = address;
  }
  p->set_admin_address(m.admin_address);
  p->set_capacity_bytes(m.capacity_bytes);
  p->set_threads(m.threads);
  p->set_incarnation(m.incarnation);
  p->set_session(m.session);
  p->set_compute_only(m.compute_only);
}

Member FromProto(const MemberProto& p) {
  Member m;
  m.id = p.node_id();
  m.host = p.host();
  for (const auto& [backend, address] : p.fabric_addresses()) m.fabric_addresses[backend] = address;
  m.admin_address = p.admin_address();
  m.capacity_bytes = p.capacity_bytes();
  m.threads = p.threads();
  m.incarnation = p.incarnation();
  m.session = p.session();
  m.compute_only = p.compute_only();
  return m;
}

std::string Seal(Envelope::Kind kind, const std::string& body) {
  Envelope e;
  e.set_format(kConfigurationFormat);
  e.set_kind(kind);
  e.set_body(body);
  e.set_crc32c(Crc32c(body));
  return e.SerializeAsString();
}

// The checked body of an envelope of `kind`.
absl::StatusOr<std::string> Open(absl::string_view bytes, Envelope::Kind kind) {
  if (bytes.size() > kMaxEncodedBytes) {
    return absl::DataLossError(absl::StrFormat("membership record of %d bytes", bytes.size()));
  }
  Envelope e;
  if (!e.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("membership record does not parse");
  }
  if (e.format() != kConfigurationFormat) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "membership record format %d is not the supported %d", e.format(), kConfigurationFormat));
  }
  if (e.kind() != kind) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "membership record of kind %d where kind %d was expected", e.kind(), kind));
  }
  if (Crc32c(e.body()) != e.crc32c()) {
    return absl::DataLossError("membership record fails its checksum (truncated or damaged)");
  }
  return std::move(*e.mutable_body());
}

}  // namespace

std::string Member::address(absl::string_view backend) const {
  auto it = fabric_addresses.find(std::string(backend));
  return it == fabric_addresses.end() ? std::string() : it->second;
}

const Member* Configuration::Find(NodeId id) const {
  auto it = std::lower_bound(members.begin(), members.end(), id,
                             [](const Member& m, NodeId v) { return m.id < v; });
  return it != members.end() && it->id == id ? &*it : nullptr;
}

std::string Configuration::Summary() const {
  return absl::StrFormat(
      "epoch %d: nodes %s (manager %d, r=%d, k=%d)", epoch,
      absl::StrJoin(members, ",",
                    [](std::string* out, const Member& m) {
                      absl::StrAppend(out, m.id, m.compute_only ? " (compute)" : "");
                    }),
      manager, replication, virtual_rings);
}

absl::Status ValidateMember(const Member& m) {
  if (m.id == 0 || m.id > kMaxNodeId) {
    return absl::InvalidArgumentError(absl::StrFormat("node id %d outside [1, %d]", m.id, kMaxNodeId));
  }
  if (m.fabric_addresses.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("node %d has no fabric address", m.id));
  }
  for (const auto& [backend, address] : m.fabric_addresses) {
    if (backend.empty() || address.empty()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("node %d has an empty fabric address for '%s'", m.id, backend));
    }
  }
  if (m.threads == 0) {
    return absl::InvalidArgumentError(absl::StrFormat("node %d has no worker threads", m.id));
  }
  return absl::OkStatus();
}

absl::Status Validate(const Configuration& c) {
  if (c.cluster.empty()) return absl::InvalidArgumentError("configuration without a cluster name");
  if (c.epoch == 0) return absl::InvalidArgumentError("configuration epoch 0 (epochs start at 1)");
  if (c.replication < 1 || c.replication > kMaxReplication) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replication %d outside [1, %d]", c.replication, kMaxReplication));
  }
  if (c.virtual_rings < 1 || c.virtual_rings > kMaxVirtualRings) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d virtual rings outside [1, %d]", c.virtual_rings, kMaxVirtualRings));
  }
  for (size_t i = 0; i < c.members.size(); ++i) {
    if (absl::Status s = ValidateMember(c.members[i]); !s.ok()) return s;
    if (i > 0 && c.members[i - 1].id >= c.members[i].id) {
      return absl::InvalidArgumentError(
          absl::StrFormat("members not sorted and unique at node %d", c.members[i].id));
    }
  }
  if (!c.members.empty() && !c.Contains(c.manager)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("manager %d is not a member of epoch %d", c.manager, c.epoch));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> EncodeConfiguration(const Configuration& c) {
  if (absl::Status s = Validate(c); !s.ok()) return s;
  ConfigurationProto p;
  p.set_cluster(c.cluster);
  p.set_epoch(c.epoch);
  p.set_manager(c.manager);
  p.set_replication(c.replication);
  p.set_virtual_rings(c.virtual_rings);
  for (const Member& m : c.members) ToProto(m, p.add_members());
  std::string body;
  if (!p.SerializeToString(&body)) return absl::InternalError("configuration does not serialize");
  std::string out = Seal(Envelope::CONFIGURATION, body);
  if (out.size() > kMaxEncodedBytes) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("configuration of %d bytes exceeds %d", out.size(), kMaxEncodedBytes));
  }
  return out;
}

absl::StatusOr<Configuration> DecodeConfiguration(absl::string_view bytes) {
  absl::StatusOr<std::string> body = Open(bytes, Envelope::CONFIGURATION);
  if (!body.ok()) return body.status();
  ConfigurationProto p;
  if (!p.ParseFromString(*body)) return absl::DataLossError("configuration body does not parse");
  Configuration c;
  c.cluster = p.cluster();
  c.epoch = p.epoch();
  c.manager = p.manager();
  c.replication = p.replication();
  c.virtual_rings = p.virtual_rings();
  c.members.reserve(p.members_size());
  for (const MemberProto& m : p.members()) c.members.push_back(FromProto(m));
  if (absl::Status s = Validate(c); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("invalid configuration: ", s.message()));
  }
  return c;
}

absl::StatusOr<std::string> EncodeRegistration(absl::string_view cluster, const Member& member) {
  if (absl::Status s = ValidateMember(member); !s.ok()) return s;
  RegistrationProto p;
  p.set_cluster(std::string(cluster));
  ToProto(member, p.mutable_member());
  std::string body;
  if (!p.SerializeToString(&body)) return absl::InternalError("registration does not serialize");
  return Seal(Envelope::REGISTRATION, body);
}

absl::StatusOr<Member> DecodeRegistration(absl::string_view bytes, absl::string_view cluster) {
  absl::StatusOr<std::string> body = Open(bytes, Envelope::REGISTRATION);
  if (!body.ok()) return body.status();
  RegistrationProto p;
  if (!p.ParseFromString(*body)) return absl::DataLossError("registration body does not parse");
  if (p.cluster() != cluster) {
    return absl::InvalidArgumentError(
        absl::StrFormat("registration for cluster '%s', not '%s'", p.cluster(), cluster));
  }
  Member m = FromProto(p.member());
  if (absl::Status s = ValidateMember(m); !s.ok()) return s;
  return m;
}

}  // namespace farm::membership
