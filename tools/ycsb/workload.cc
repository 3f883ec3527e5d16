#include "tools/ycsb/workload.h"

#include <cmath>
#include <type_traits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace farm::ycsb {

absl::string_view DistributionName(RequestDistribution d) {
  switch (d) {
    case RequestDistribution::kUniform:
      return "uniform";
    case RequestDistribution::kZipfian:
      return "zipfian";
    case RequestDistribution::kLatest:
      return "latest";
    case RequestDistribution::kHotspot:
      return "hotspot";
  }
  return "?";
}

absl::StatusOr<RequestDistribution> ParseDistribution(absl::string_view name) {
  for (RequestDistribution d : {RequestDistribution::kUniform, RequestDistribution::kZipfian,
                                RequestDistribution::kLatest, RequestDistribution::kHotspot}) {
    if (absl::EqualsIgnoreCase(name, DistributionName(d))) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown request distribution \"", name,
                                                 "\" (uniform, zipfian, latest, hotspot)"));
}

absl::Status WorkloadSpec::Validate() const {
  auto bad = [](absl::string_view what) { return absl::InvalidArgumentError(what); };
  if (record_count < 1)
    return bad(absl::StrCat("recordcount must be at least 1, not ", record_count));
  if (operation_count < 0) return bad("operationcount must not be negative");
  if (insert_start < 0) return bad("insertstart must not be negative");
  if (field_count < 1 || field_length < 1) {
    return bad(absl::StrCat("fieldcount and fieldlength must be at least 1, not ", field_count,
                            " and ", field_length));
  }
  if (value_size() > (64u << 20)) return bad("values over 64 MiB (fieldcount * fieldlength)");
  for (double p : {read_proportion, update_proportion, insert_proportion, scan_proportion,
                   read_modify_write_proportion}) {
    if (!(p >= 0) || !std::isfinite(p)) return bad("operation proportions must be finite and >= 0");
  }
  if (read_proportion + update_proportion + insert_proportion + scan_proportion +
          read_modify_write_proportion <=
      0) {
    return bad("all operation proportions are 0");
  }
  if (!(zipfian_constant > 0 && zipfian_constant < 1)) {
    return bad(absl::StrCat("zipfianconstant must be in (0, 1), not ", zipfian_constant));
  }
  if (!(hotspot_data_fraction >= 0 && hotspot_data_fraction <= 1 && hotspot_opn_fraction >= 0 &&
        hotspot_opn_fraction <= 1)) {
    return bad("hotspotdatafraction and hotspotopnfraction must be in [0, 1]");
  }
  if (max_scan_length < 1) return bad("maxscanlength must be at least 1");
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> PresetWorkload(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  absl::string_view letter = lower;
  absl::ConsumePrefix(&letter, "workload");
  WorkloadSpec s;
  s.name = std::string(letter);
  s.read_proportion = s.update_proportion = 0;
  s.request_distribution = RequestDistribution::kZipfian;
  if (letter == "a") {
    s.read_proportion = 0.5;
    s.update_proportion = 0.5;
  } else if (letter == "b") {
    s.read_proportion = 0.95;
    s.update_proportion = 0.05;
  } else if (letter == "c") {
    s.read_proportion = 1.0;
  } else if (letter == "d") {
    s.read_proportion = 0.95;
    s.insert_proportion = 0.05;
    s.request_distribution = RequestDistribution::kLatest;
  } else if (letter == "e") {
    s.scan_proportion = 0.95;
    s.insert_proportion = 0.05;
    s.max_scan_length = 100;
  } else if (letter == "f") {
    s.read_proportion = 0.5;
    s.read_modify_write_proportion = 0.5;
  } else {
    return absl::NotFoundError(
        absl::StrCat("no standard workload \"", name, "\" (a, b, c, d, e, f)"));
  }
  return s;
}

void ApplyFarmPreset(WorkloadSpec* spec) {
  spec->key_size = 16;
  spec->field_count = 1;
  spec->field_length = 32;
  absl::StrAppend(&spec->name, "+farm");
}

namespace {

template <typename T>
absl::Status ParseInto(absl::string_view name, absl::string_view text, T* out) {
  bool ok = false;
  if constexpr (std::is_same_v<T, double>) {
    ok = absl::SimpleAtod(text, out);
  } else {
    ok = absl::SimpleAtoi(text, out);
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("property ", name, ": cannot parse \"", text, "\""));
}

}  // namespace

absl::Status SetProperty(WorkloadSpec* spec, absl::string_view name, absl::string_view value) {
  const std::string n = absl::AsciiStrToLower(name);
  if (n == "recordcount") return ParseInto(n, value, &spec->record_count);
  if (n == "operationcount") return ParseInto(n, value, &spec->operation_count);
  if (n == "insertstart") return ParseInto(n, value, &spec->insert_start);
  if (n == "fieldcount") return ParseInto(n, value, &spec->field_count);
  if (n == "fieldlength") return ParseInto(n, value, &spec->field_length);
  if (n == "keysize") return ParseInto(n, value, &spec->key_size);
  if (n == "readproportion") return ParseInto(n, value, &spec->read_proportion);
  if (n == "updateproportion") return ParseInto(n, value, &spec->update_proportion);
  if (n == "insertproportion") return ParseInto(n, value, &spec->insert_proportion);
  if (n == "scanproportion") return ParseInto(n, value, &spec->scan_proportion);
  if (n == "readmodifywriteproportion") {
    return ParseInto(n, value, &spec->read_modify_write_proportion);
  }
  if (n == "zipfianconstant") return ParseInto(n, value, &spec->zipfian_constant);
  if (n == "hotspotdatafraction") return ParseInto(n, value, &spec->hotspot_data_fraction);
  if (n == "hotspotopnfraction") return ParseInto(n, value, &spec->hotspot_opn_fraction);
  if (n == "maxscanlength") return ParseInto(n, value, &spec->max_scan_length);
  if (n == "requestdistribution") {
    absl::StatusOr<RequestDistribution> d = ParseDistribution(value);
    if (!d.ok()) return d.status();
    spec->request_distribution = *d;
    return absl::OkStatus();
  }
  // Properties YCSB has whose only supported value here is its default.
  if (n == "scanlengthdistribution" || n == "insertorder" || n == "readallfields" ||
      n == "writeallfields") {
    const absl::string_view supported = n == "scanlengthdistribution" ? "uniform"
                                        : n == "insertorder"          ? "hashed"
                                                                      : "true";
    if (absl::EqualsIgnoreCase(value, supported)) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat("property ", n, ": only ", supported,
                     " is supported (byte-string values; see workload.h)"));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown workload property \"", name, "\""));
}

absl::StatusOr<std::unique_ptr<CoreWorkload>> CoreWorkload::Create(const WorkloadSpec& spec) {
  if (absl::Status s = spec.Validate(); !s.ok()) return s;
  absl::StatusOr<RecordFormat> format = RecordFormat::Create(spec.key_size, spec.value_size());
  if (!format.ok()) return format.status();
  const int64_t last_possible =
      spec.insert_start + spec.record_count +
      (spec.operation_count == 0 ? 0 : spec.operation_count);  // every op an insert, at most
  if (last_possible > format->key_space()) {
    return absl::InvalidArgumentError(
        absl::StrCat(spec.key_size, "-byte keys name ", format->key_space(),
                     " records; the workload may need ", last_possible));
  }
  double zetan = 0;
  if (spec.request_distribution == RequestDistribution::kLatest) {
    zetan = Zeta(spec.record_count, spec.zipfian_constant);
  } else if (spec.request_distribution == RequestDistribution::kZipfian) {
    zetan = ScrambledZipfianGenerator::Zetan(spec.zipfian_constant);
  }
  return std::unique_ptr<CoreWorkload>(new CoreWorkload(spec, *std::move(format), zetan));
}

CoreWorkload::CoreWorkload(const WorkloadSpec& spec, RecordFormat format, double zetan)
    : spec_(spec),
      format_(std::move(format)),
      insert_sequence_(spec.insert_start + spec.record_count),
      zetan_(zetan) {}

KeyChooser CoreWorkload::NewKeyChooser() const {
  const int64_t first = spec_.insert_start;
  const int64_t last_loaded = spec_.insert_start + spec_.record_count - 1;
  switch (spec_.request_distribution) {
    case RequestDistribution::kUniform:
      return UniformLongGenerator(first, last_loaded);
    case RequestDistribution::kZipfian: {
      const auto expected_new_keys =
          static_cast<int64_t>(spec_.operation_count * spec_.insert_proportion * 2.0);
      return ScrambledZipfianGenerator(first, last_loaded + expected_new_keys,
                                       spec_.zipfian_constant, zetan_);
    }
    case RequestDistribution::kLatest:
      return SkewedLatestGenerator(
          insert_sequence_, first,
          ZipfianGenerator(0, spec_.record_count - 1, spec_.zipfian_constant, zetan_));
    case RequestDistribution::kHotspot:
      return HotspotGenerator(first, last_loaded, spec_.hotspot_data_fraction,
                              spec_.hotspot_opn_fraction);
  }
  return UniformLongGenerator(first, last_loaded);
}

}  // namespace farm::ycsb
