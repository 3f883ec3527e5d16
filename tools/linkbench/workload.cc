#include "tools/linkbench/workload.h"

#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace farm::linkbench {
namespace {

#define LB_ASSIGN_OR_RETURN(lhs, expr)      \
  do {                                      \
    auto _v = (expr);                       \
    if (!_v.ok()) return _v.status();       \
    lhs = *std::move(_v);                   \
  } while (0)

absl::StatusOr<DataGenConfig> ReadDataGen(const Properties& props, const std::string& key) {
  absl::StatusOr<std::string> cls = props.GetString(key);
  if (!cls.ok()) return cls.status();
  if (!absl::EndsWith(*cls, "MotifDataGenerator")) {
    return absl::UnimplementedError(
        absl::StrCat(key, " = ", *cls, ": only MotifDataGenerator is implemented"));
  }
  const std::string prefix = key + "_";
  DataGenConfig gen;
  int64_t v;
  LB_ASSIGN_OR_RETURN(v, props.GetInt(prefix + "startbyte"));
  gen.start_byte = static_cast<int>(v);
  LB_ASSIGN_OR_RETURN(v, props.GetInt(prefix + "endbyte"));
  gen.end_byte = static_cast<int>(v);
  LB_ASSIGN_OR_RETURN(gen.uniqueness, props.GetDouble(prefix + "uniqueness"));
  if (gen.start_byte < 0 || gen.end_byte > 255 || gen.start_byte >= gen.end_byte) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "startbyte/endbyte must satisfy 0 <= start < end <= 255"));
  }
  gen.motif_bytes = 512;  // (quirk) motif_length is never read; see workload.h
  return gen;
}

absl::StatusOr<AccessConfig> ReadAccess(const Properties& props, const std::string& prefix) {
  absl::StatusOr<std::string> fn = props.GetString(prefix + "function");
  if (!fn.ok()) return fn.status();
  AccessConfig access;
  if (absl::EndsWith(*fn, "ZipfDistribution")) {
    access.kind = AccessConfig::Kind::kZipf;
    LB_ASSIGN_OR_RETURN(access.shape, props.GetDouble(prefix + "shape"));
    if (access.shape <= 0 || access.shape == 1.0) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "shape must be positive and not 1"));
    }
  } else if (absl::EndsWith(*fn, "UniformDistribution")) {
    access.kind = AccessConfig::Kind::kUniform;
  } else {
    return absl::UnimplementedError(absl::StrCat(
        prefix, "function = ", *fn, ": only ZipfDistribution and UniformDistribution are implemented"));
  }
  return access;
}

}  // namespace

absl::StatusOr<Workload> WorkloadFromProperties(const Properties& props) {
  Workload w;
  int64_t v;
  LB_ASSIGN_OR_RETURN(w.startid1, props.GetInt("startid1"));
  LB_ASSIGN_OR_RETURN(w.maxid1, props.GetInt("maxid1"));
  if (w.startid1 < 1) return absl::InvalidArgumentError("startid1 must be >= 1");
  if (w.maxid1 <= w.startid1 + 1) return absl::InvalidArgumentError("maxid1 must be > startid1 + 1");
  LB_ASSIGN_OR_RETURN(v, props.GetInt("link_type_count", 1));
  w.link_type_count = static_cast<int>(v);
  if (w.link_type_count < 1) return absl::InvalidArgumentError("link_type_count must be >= 1");
  LB_ASSIGN_OR_RETURN(w.randomid2max, props.GetInt("randomid2max", 0));
  LB_ASSIGN_OR_RETURN(v, props.GetInt("id2gen_config", 0));
  w.id2gen_config = static_cast<int>(v);

  absl::StatusOr<std::string> nlinks_func = props.GetString("nlinks_func");
  if (!nlinks_func.ok()) return nlinks_func.status();
  if (absl::AsciiStrToLower(*nlinks_func) != "real") {
    return absl::UnimplementedError(
        absl::StrCat("nlinks_func = ", *nlinks_func, ": only the real distribution is implemented"));
  }

  LB_ASSIGN_OR_RETURN(w.link_datasize, props.GetDouble("link_datasize"));
  LB_ASSIGN_OR_RETURN(w.node_datasize, props.GetDouble("node_datasize"));
  LB_ASSIGN_OR_RETURN(w.link_add, ReadDataGen(props, "link_add_datagen"));
  LB_ASSIGN_OR_RETURN(w.link_up, ReadDataGen(props, "link_up_datagen"));
  LB_ASSIGN_OR_RETURN(w.node_add, ReadDataGen(props, "node_add_datagen"));
  LB_ASSIGN_OR_RETURN(w.node_up, ReadDataGen(props, "node_up_datagen"));

  double total = 0;
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    // Link ops are required, node ops default to 0 (as LinkBenchRequest).
    if (i < static_cast<size_t>(OpType::kAddNode)) {
      LB_ASSIGN_OR_RETURN(w.mix[i], props.GetDouble(kOpPropertyKeys[i]));
    } else {
      LB_ASSIGN_OR_RETURN(w.mix[i], props.GetDouble(kOpPropertyKeys[i], 0.0));
    }
    total += w.mix[i];
  }
  if (std::abs(total - 100.0) > 1e-5) {
    return absl::InvalidArgumentError(
        absl::StrCat("the operation percentages in ", props.origin(), " add up to ", total, ", not 100"));
  }
  double history;
  LB_ASSIGN_OR_RETURN(history, props.GetDouble("getlinklist_history", 0.0));
  w.getlinklist_history = history / 100;  // a percentage in the file

  LB_ASSIGN_OR_RETURN(w.read, ReadAccess(props, "read_"));
  LB_ASSIGN_OR_RETURN(w.write, ReadAccess(props, "write_"));
  if (props.Has("read_uncorr_blend")) {
    LB_ASSIGN_OR_RETURN(w.read_uncorr_blend, props.GetDouble("read_uncorr_blend"));
    w.read_uncorr_blend /= 100;
    if (w.read_uncorr_blend > 0) LB_ASSIGN_OR_RETURN(w.read_uncorr, ReadAccess(props, "read_uncorr_"));
  }
  // (quirk) Config.WRITE_UNCORR_CONFIG_PREFIX is "read_uncorr_": the write_uncorr_*
  // settings are never read and link writes blend in the read_uncorr distribution.
  w.write_uncorr_blend = w.read_uncorr_blend;
  w.write_uncorr = w.read_uncorr;

  const bool node_ops = w.mix[6] + w.mix[7] + w.mix[8] + w.mix[9] > 0;
  if (node_ops) {
    LB_ASSIGN_OR_RETURN(w.node_read, ReadAccess(props, "node_read_"));
    LB_ASSIGN_OR_RETURN(w.node_update, ReadAccess(props, "node_update_"));
    LB_ASSIGN_OR_RETURN(w.node_delete, ReadAccess(props, "node_delete_"));
  }

  if (props.Has("link_multiget_dist") && !props.GetString("link_multiget_dist")->empty()) {
    const std::string cls = *props.GetString("link_multiget_dist");
    if (!absl::EndsWith(cls, "GeometricDistribution")) {
      return absl::UnimplementedError(
          absl::StrCat("link_multiget_dist = ", cls, ": only GeometricDistribution is implemented"));
    }
    w.multiget_geometric = true;
    LB_ASSIGN_OR_RETURN(w.multiget_min, props.GetInt("link_multiget_dist_min"));
    LB_ASSIGN_OR_RETURN(w.multiget_max, props.GetInt("link_multiget_dist_max"));
    LB_ASSIGN_OR_RETURN(w.multiget_p, props.GetDouble("link_multiget_dist_prob"));
    if (w.multiget_max <= w.multiget_min || w.multiget_p <= 0 || w.multiget_p >= 1) {
      return absl::InvalidArgumentError("link_multiget_dist: need min < max and 0 < prob < 1");
    }
  } else {
    w.multiget_geometric = false;
  }
  return w;
}

// The TAO paper (Bronson et al., "TAO: Facebook's Distributed Data Store for the Social
// Graph", USENIX ATC 2013, section 6 / Figure 3, "relative frequencies for client
// requests to TAO from all Facebook products"): reads are 99.8% of calls and writes
// 0.2%. Among reads: assoc_get 15.7%, assoc_range 40.9%, assoc_time_range 2.8%,
// assoc_count 11.7%, obj_get 28.9%. Among writes: assoc_add 52.5%, assoc_del 8.3%,
// assoc_change_type 0.9%, obj_add 16.5%, obj_update 20.7%, obj_delete 2.0% (the
// paper's rounded write shares sum to 100.9%; they are normalised here).
//
// Mapping onto LinkBench's operations: obj_get -> getNode; assoc_range -> getLinkList
// with a small page (limit 50); assoc_time_range -> getLinkList bounded to a 7-day
// window; assoc_get -> multiget; assoc_count -> countLinks; assoc_add -> addLink;
// assoc_del -> deleteLink; assoc_change_type -> updateLink (an addLink upsert);
// obj_add -> addNode; obj_update -> updateNode; obj_delete -> deleteNode.
void ApplyTaoMix(Workload& w) {
  constexpr double kReads = 99.8, kWrites = 0.2;
  constexpr double kWriteSum = 52.5 + 8.3 + 0.9 + 16.5 + 20.7 + 2.0;
  const double range = 40.9 + 2.8;
  w.mix[static_cast<size_t>(OpType::kGetNode)] = kReads * 0.289;
  w.mix[static_cast<size_t>(OpType::kGetLinksList)] = kReads * range / 100;
  w.mix[static_cast<size_t>(OpType::kMultigetLink)] = kReads * 0.157;
  w.mix[static_cast<size_t>(OpType::kCountLink)] = kReads * 0.117;
  w.mix[static_cast<size_t>(OpType::kAddLink)] = kWrites * 52.5 / kWriteSum;
  w.mix[static_cast<size_t>(OpType::kDeleteLink)] = kWrites * 8.3 / kWriteSum;
  w.mix[static_cast<size_t>(OpType::kUpdateLink)] = kWrites * 0.9 / kWriteSum;
  w.mix[static_cast<size_t>(OpType::kAddNode)] = kWrites * 16.5 / kWriteSum;
  w.mix[static_cast<size_t>(OpType::kUpdateNode)] = kWrites * 20.7 / kWriteSum;
  w.mix[static_cast<size_t>(OpType::kDeleteNode)] = kWrites * 2.0 / kWriteSum;
  w.time_range_fraction = 2.8 / range;
  w.time_range_ms = int64_t{7} * 24 * 3600 * 1000;
  w.list_limit = 50;
  w.getlinklist_history = 0;  // pages are small: no LinkBench history re-fetches
  w.mix_name = "tao";
}

std::array<double, kOpTypeCount> Cumulative(const std::array<double, kOpTypeCount>& mix) {
  std::array<double, kOpTypeCount> cumulative{};
  double sum = 0;
  for (size_t i = 0; i < kOpTypeCount; ++i) cumulative[i] = sum += mix[i];
  return cumulative;
}

size_t ChooseOp(const std::array<double, kOpTypeCount>& cumulative, double r) {
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    if (r <= cumulative[i]) return i;
  }
  return kOpTypeCount;
}

}  // namespace farm::linkbench
