// Table layouts by name: the factory of the KvTable seam (kv/kv_table.h). The kv
// service, in-process clusters, YCSB and kv_bench choose a layout by name
// (--layout=..., farm_node --kv_layout=...; kv/layout_spec.h's syntax):
//
//   hopscotch           FaRM's chained associative hopscotch table (the default; the
//                       reference): kv/table_node.h. Option H=<even 2..32> overrides
//                       TableOptions::layout.neighbourhood.
//   linear              linear probing with a variable READ size (ADMS'20):
//                       kv/linear/linear_node.h. Options: R=<slots> a fixed read size
//                       (the paper's fixed linear) instead of the model's; bw=off drops
//                       the model's bandwidth constraint (its "unconstrained" variant);
//                       G=<1..64> slots per FaRM object (4); c_ns, alpha_ns, rho0_mps,
//                       link_gbps: the model's constants (the paper's by default).
//   chained             Mercury's chained hashing with incremental expansion
//                       (SYSTOR'13): kv/chained/chained_node.h. Options: S=<1..16>
//                       pairs per bucket head and per overflow block (2); B=<buckets>
//                       initial buckets per node (default: the same pair slots as
//                       hopscotch, buckets_per_node * H/2 / S); load=<x> pairs per
//                       bucket that start an expansion (1.0); expand=on|off (on:
//                       expansions start on their own; off: only when asked).
//   cuckoo              Nessie's client-driven N-way cuckoo table on one-sided ops only
//                       (index of 64-bit entries, self-verifying data entries, MIGRATE):
//                       kv/cuckoo/cuckoo_node.h. No transactions (BeginTxn is
//                       Unimplemented). Options: N=<2|3> ways (3); I=<1..16> index slots
//                       per pair of capacity (2); D=<1..16> max displacement depth (4).
//
// Every layout takes the identity, inline key and value sizes and capacity from
// KvTableOptions::table: hopscotch allocates buckets_per_node buckets of H/2 slots per
// node; linear the same number of pair slots (buckets_per_node * H/2); cuckoo data
// tables for that many pairs per node and an index I times larger (inline sizes unused).
#ifndef FARM_KV_TABLE_LAYOUTS_H_
#define FARM_KV_TABLE_LAYOUTS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farm/api/host.h"
#include "kv/chained/chained_host.h"
#include "kv/cuckoo/cuckoo_host.h"
#include "kv/kv_table.h"
#include "kv/linear/linear_host.h"
#include "kv/table_host.h"

namespace farm::kv {

struct KvTableOptions {
  std::string layout = "hopscotch";
  TableOptions table;
  // chained: a test seam pausing expansions between buckets (kv/chained/expander.h).
  chained::HoldHook chained_hold;
};

// The layouts this build has, comma-separated: "hopscotch, linear, chained, cuckoo".
std::string BuiltLayouts();

// OK when `layout` names a built layout with valid options; else InvalidArgument (for
// an unknown or not-yet-built name, the message lists the built ones).
absl::Status ValidateLayout(absl::string_view layout);

// The linear layout's options for `options` (layout "linear..."), for tests and tools.
absl::StatusOr<linear::LinearOptions> LinearOptionsFor(const KvTableOptions& options);

// The chained layout's options for `options` (layout "chained..."), for tests and tools.
absl::StatusOr<chained::ChainedOptions> ChainedOptionsFor(const KvTableOptions& options);
// The cuckoo layout's options for `options` (layout "cuckoo..."), for tests and tools.
absl::StatusOr<cuckoo::CuckooOptions> CuckooOptionsFor(const KvTableOptions& options);

// Installs the named layout's table on `host`; call before the node starts.
absl::StatusOr<std::unique_ptr<KvTable>> InstallKvTable(Host& host, const KvTableOptions& options);

}  // namespace farm::kv

#endif  // FARM_KV_TABLE_LAYOUTS_H_
