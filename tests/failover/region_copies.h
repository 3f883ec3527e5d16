// What a node's admin port says about re-replication (failover_process_test): which of
// its regions still wait for copies.
#ifndef FARM_TESTS_FAILOVER_REGION_COPIES_H_
#define FARM_TESTS_FAILOVER_REGION_COPIES_H_

#include <optional>
#include <string>
#include <vector>

#include "farm/node/admin_protocol.h"

namespace farm::failover_test {

// The regions `s` reports as still re-replicating — RegionStats.copies_due (backups yet
// to receive a copy) not empty, or .frozen — as "region R: copies due to [..]"; nullopt
// when RegionStats has no copies_due field. Those fields come with failover: they are
// read by name (protobuf reflection) so that this file builds without them.
std::optional<std::vector<std::string>> RegionsReReplicating(const node::NodeStats& s);

}  // namespace farm::failover_test

#endif  // FARM_TESTS_FAILOVER_REGION_COPIES_H_
