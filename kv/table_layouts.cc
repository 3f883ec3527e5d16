#include "kv/table_layouts.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kv/layout_spec.h"
#include "kv/chained/chained_node.h"
#include "kv/cuckoo/cuckoo_node.h"
#include "kv/linear/linear_node.h"
#include "kv/table_node.h"

namespace farm::kv {
namespace {

constexpr const char* kBuilt[] = {"hopscotch", "linear", "chained", "cuckoo"};

absl::Status BadOption(absl::string_view layout, absl::string_view name, absl::string_view value,
                       absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat("table layout \"", layout, "\": ", name, "=", value, " (", expected, ")"));
}

absl::Status CheckName(const LayoutSpec& spec) {
  for (const char* built : kBuilt) {
    if (spec.name == built) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown table layout \"", spec.name, "\"; built layouts: ", BuiltLayouts()));
}

absl::StatusOr<TableOptions> HopscotchOptions(absl::string_view text, const LayoutSpec& spec, TableOptions table) {
  for (const auto& [name, value] : spec.options) {
    uint32_t n = 0;
    if (name != "H") {
      return absl::InvalidArgumentError(
          absl::StrCat("table layout \"", text, "\": hopscotch has no option \"", name, "\" (options: H)"));
    }
    if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "an even number in [2, 32]");
    table.layout.neighbourhood = n;
  }
  if (absl::Status s = table.layout.Validate(); !s.ok()) return s;
  return table;
}

absl::StatusOr<linear::LinearOptions> LinearOptionsFrom(absl::string_view text, const LayoutSpec& spec,
                                                        const TableOptions& table) {
  linear::LinearOptions o;
  o.identity = table.identity;
  o.layout.inline_key_bytes = table.layout.inline_key_bytes;
  o.layout.inline_value_bytes = table.layout.inline_value_bytes;
  o.slots_per_node = table.buckets_per_node * table.layout.slots_per_bucket();
  for (const auto& [name, value] : spec.options) {
    double d = 0;
    uint32_t n = 0;
    if (name == "R") {
      if (!absl::SimpleAtoi(value, &n) || n == 0) return BadOption(text, name, value, "slots per READ, >= 1");
      o.read.fixed = n;
    } else if (name == "G") {
      if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "slots per object");
      o.layout.slots_per_group = n;
    } else if (name == "bw") {
      if (value != "on" && value != "off") return BadOption(text, name, value, "on or off");
      o.read.bandwidth_limit = value == "on";
    } else if (name == "c_ns" || name == "alpha_ns" || name == "rho0_mps" || name == "link_gbps") {
      if (!absl::SimpleAtod(value, &d) || !(d > 0)) return BadOption(text, name, value, "a positive number");
      if (name == "c_ns") o.read.cost.c_ns = d;
      if (name == "alpha_ns") o.read.cost.alpha_ns_per_byte = d;
      if (name == "rho0_mps") o.read.cost.rho0_per_s = d * 1e6;
      if (name == "link_gbps") o.read.cost.link_bytes_per_s = d * 1e9 / 8;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("table layout \"", text, "\": linear has no option \"", name,
                                                     "\" (options: R, G, bw, c_ns, alpha_ns, rho0_mps, link_gbps)"));
    }
  }
  if (absl::Status s = o.layout.Validate(); !s.ok()) return s;
  return o;
}

absl::StatusOr<chained::ChainedOptions> ChainedOptionsFrom(absl::string_view text, const LayoutSpec& spec,
                                                          const TableOptions& table) {
  chained::ChainedOptions o;
  o.identity = table.identity;
  o.layout.inline_key_bytes = table.layout.inline_key_bytes;
  o.layout.inline_value_bytes = table.layout.inline_value_bytes;
  std::optional<uint64_t> initial;
  for (const auto& [name, value] : spec.options) {
    uint32_t n = 0;
    uint64_t b = 0;
    double d = 0;
    if (name == "S") {
      if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "pairs per bucket, 1..16");
      o.layout.slots_per_bucket = n;
    } else if (name == "B") {
      if (!absl::SimpleAtoi(value, &b) || b == 0) return BadOption(text, name, value, "initial buckets per node, >= 1");
      initial = b;
    } else if (name == "load") {
      if (!absl::SimpleAtod(value, &d) || !(d > 0)) return BadOption(text, name, value, "pairs per bucket, > 0");
      o.expansion.max_load = d;
    } else if (name == "expand") {
      if (value != "on" && value != "off") return BadOption(text, name, value, "on or off");
      o.expansion.automatic = value == "on";
    } else {
      return absl::InvalidArgumentError(absl::StrCat("table layout \"", text, "\": chained has no option \"", name,
                                                     "\" (options: S, B, load, expand)"));
    }
  }
  if (absl::Status s = o.layout.Validate(); !s.ok()) return s;
  o.buckets_per_node =
      initial.value_or(std::max<uint64_t>(1, table.buckets_per_node * table.layout.slots_per_bucket() /
                                                 o.layout.slots_per_bucket));
  return o;
}

absl::StatusOr<cuckoo::CuckooOptions> CuckooOptionsFrom(absl::string_view text, const LayoutSpec& spec,
                                                        const TableOptions& table) {
  cuckoo::CuckooOptions o;
  o.identity = table.identity;
  o.pairs_per_node = table.buckets_per_node * table.layout.slots_per_bucket();
  for (const auto& [name, value] : spec.options) {
    uint32_t n = 0;
    if (name == "N") {
      if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "2 or 3 ways");
      o.ways = n;
    } else if (name == "I") {
      if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "index slots per pair, 1 .. 16");
      o.index_factor = n;
    } else if (name == "D") {
      if (!absl::SimpleAtoi(value, &n)) return BadOption(text, name, value, "displacement depth, 1 .. 16");
      o.limits.max_displacement = n;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("table layout \"", text, "\": cuckoo has no option \"", name, "\" (options: N, I, D)"));
    }
  }
  if (absl::Status s = o.Validate(); !s.ok()) return s;
  return o;
}

}  // namespace

absl::StatusOr<cuckoo::CuckooOptions> CuckooOptionsFor(const KvTableOptions& options) {
  absl::StatusOr<LayoutSpec> spec = ParseLayoutSpec(options.layout);
  if (!spec.ok()) return spec.status();
  if (spec->name != "cuckoo") {
    return absl::InvalidArgumentError(absl::StrCat("table layout \"", options.layout, "\" is not cuckoo"));
  }
  return CuckooOptionsFrom(options.layout, *spec, options.table);
}

std::string BuiltLayouts() { return absl::StrJoin(kBuilt, ", "); }

absl::Status ValidateLayout(absl::string_view layout) {
  absl::StatusOr<LayoutSpec> spec = ParseLayoutSpec(layout);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckName(*spec); !s.ok()) return s;
  if (spec->name == "hopscotch") return HopscotchOptions(layout, *spec, TableOptions{}).status();
  if (spec->name == "chained") return ChainedOptionsFrom(layout, *spec, TableOptions{}).status();
  if (spec->name == "cuckoo") return CuckooOptionsFrom(layout, *spec, TableOptions{}).status();
  return LinearOptionsFrom(layout, *spec, TableOptions{}).status();
}

absl::StatusOr<linear::LinearOptions> LinearOptionsFor(const KvTableOptions& options) {
  absl::StatusOr<LayoutSpec> spec = ParseLayoutSpec(options.layout);
  if (!spec.ok()) return spec.status();
  if (spec->name != "linear") {
    return absl::InvalidArgumentError(absl::StrCat("table layout \"", options.layout, "\" is not linear"));
  }
  return LinearOptionsFrom(options.layout, *spec, options.table);
}

absl::StatusOr<chained::ChainedOptions> ChainedOptionsFor(const KvTableOptions& options) {
  absl::StatusOr<LayoutSpec> spec = ParseLayoutSpec(options.layout);
  if (!spec.ok()) return spec.status();
  if (spec->name != "chained") {
    return absl::InvalidArgumentError(absl::StrCat("table layout \"", options.layout, "\" is not chained"));
  }
  absl::StatusOr<chained::ChainedOptions> o = ChainedOptionsFrom(options.layout, *spec, options.table);
  if (o.ok()) o->expansion.hold = options.chained_hold;
  return o;
}

absl::StatusOr<std::unique_ptr<KvTable>> InstallKvTable(Host& host, const KvTableOptions& options) {
  absl::StatusOr<LayoutSpec> spec = ParseLayoutSpec(options.layout);
  if (!spec.ok()) return spec.status();
  if (absl::Status s = CheckName(*spec); !s.ok()) return s;
  if (spec->name == "hopscotch") {
    absl::StatusOr<TableOptions> table = HopscotchOptions(options.layout, *spec, options.table);
    if (!table.ok()) return table.status();
    absl::StatusOr<std::unique_ptr<TableNode>> node = TableNode::Install(host, std::move(*table));
    if (!node.ok()) return node.status();
    return std::unique_ptr<KvTable>(std::move(*node));
  }
  if (spec->name == "chained") {
    absl::StatusOr<chained::ChainedOptions> chained = ChainedOptionsFor(options);
    if (!chained.ok()) return chained.status();
    absl::StatusOr<std::unique_ptr<chained::ChainedNode>> node =
        chained::ChainedNode::Install(host, std::move(*chained), options.layout);
    if (!node.ok()) return node.status();
    return std::unique_ptr<KvTable>(std::move(*node));
  }
  if (spec->name == "cuckoo") {
    absl::StatusOr<cuckoo::CuckooOptions> cuckoo = CuckooOptionsFrom(options.layout, *spec, options.table);
    if (!cuckoo.ok()) return cuckoo.status();
    absl::StatusOr<std::unique_ptr<cuckoo::CuckooNode>> node =
        cuckoo::CuckooNode::Install(host, std::move(*cuckoo), options.layout);
    if (!node.ok()) return node.status();
    return std::unique_ptr<KvTable>(std::move(*node));
  }
  absl::StatusOr<linear::LinearOptions> linear = LinearOptionsFrom(options.layout, *spec, options.table);
  if (!linear.ok()) return linear.status();
  absl::StatusOr<std::unique_ptr<linear::LinearNode>> node =
      linear::LinearNode::Install(host, std::move(*linear), options.layout);
  if (!node.ok()) return node.status();
  return std::unique_ptr<KvTable>(std::move(*node));
}

}  // namespace farm::kv
