#include "membership/static_membership.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace farm::membership {

absl::StatusOr<std::vector<Member>> ParseMemberList(absl::string_view list) {
  std::vector<Member> members;
  for (absl::string_view entry : absl::StrSplit(list, ',', absl::SkipWhitespace())) {
    const std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(entry, '=');
    Member m;
    if (!absl::SimpleAtoi(kv.first, &m.id) || kv.second.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("member '", entry, "' is not ID=BACKEND:ADDRESS[;BACKEND:ADDRESS][;compute]"));
    }
    for (absl::string_view locator : absl::StrSplit(kv.second, ';')) {
      if (locator == "compute") {  // runs applications, holds no regions
        m.compute_only = true;
        continue;
      }
      const size_t colon = locator.find(':');
      if (colon == absl::string_view::npos || colon == 0 || colon + 1 == locator.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("member ", m.id, ": locator '", locator, "' is not BACKEND:ADDRESS"));
      }
      m.fabric_addresses[std::string(locator.substr(0, colon))] = std::string(locator);
    }
    m.threads = 1;
    if (absl::Status s = ValidateMember(m); !s.ok()) return s;
    members.push_back(std::move(m));
  }
  if (members.empty()) return absl::InvalidArgumentError("empty member list");
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  for (size_t i = 1; i < members.size(); ++i) {
    if (members[i].id == members[i - 1].id) {
      return absl::InvalidArgumentError(absl::StrCat("node ", members[i].id, " listed twice"));
    }
  }
  return members;
}

absl::StatusOr<std::unique_ptr<StaticMembership>> StaticMembership::Create(Configuration config,
                                                                           NodeId self) {
  if (absl::Status s = Validate(config); !s.ok()) return s;
  if (!config.Contains(self)) {
    return absl::InvalidArgumentError(absl::StrCat("node ", self, " is not in the member list"));
  }
  return std::unique_ptr<StaticMembership>(
      new StaticMembership(std::make_shared<const Configuration>(std::move(config)), self));
}

absl::Status StaticMembership::Start(ConfigCallback on_config) {
  gate_.Apply(*config_);
  if (on_config) on_config(config_);
  return absl::OkStatus();
}

MembershipStatus StaticMembership::status() const {
  MembershipStatus s;
  s.source = "static";
  s.session = "n/a";
  s.manager = false;
  s.serving = gate_.serving();
  s.epoch = config_->epoch;
  return s;
}

}  // namespace farm::membership
