// The YCSB CoreWorkload: its properties (WorkloadSpec, with YCSB's names and defaults),
// the standard workloads A-F, the "farm" modifier, and CoreWorkload, the state one run
// of a workload shares among its client threads.
//
// Mapping to YCSB (site.ycsb.workloads.CoreWorkload), property by property:
//   recordcount, operationcount, fieldcount, fieldlength, readproportion,
//   updateproportion, insertproportion, scanproportion, readmodifywriteproportion,
//   requestdistribution (uniform, zipfian, latest, hotspot), maxscanlength,
//   scanlengthdistribution (uniform only), insertorder (hashed only),
//   hotspotdatafraction, hotspotopnfraction, insertstart: as YCSB.
//   zipfianconstant and keysize are extensions (YCSB fixes theta at 0.99 and lets the
//   key length follow the hash; see record_format.h).
// Deviations, because the stores here hold byte strings, not records of fields:
//   - A value is fieldcount * fieldlength bytes, the fields concatenated. Reads return
//     the whole value (readallfields=true), and updates write a whole value: YCSB's
//     default writeallfields=false updates one field, which a byte-string store cannot
//     do without a read-modify-write of its own.
//   - A scan of length n from record k is a multi-get of the keys of records
//     k .. k+n-1 in insert order (a hash table keeps no key order), cut short at the
//     last record inserted (an ordered store's scan would simply return fewer records).
#ifndef FARM_TOOLS_YCSB_WORKLOAD_H_
#define FARM_TOOLS_YCSB_WORKLOAD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tools/ycsb/generators.h"
#include "tools/ycsb/record_format.h"

namespace farm::ycsb {

enum class RequestDistribution { kUniform, kZipfian, kLatest, kHotspot };

// "uniform", "zipfian", "latest", "hotspot".
absl::string_view DistributionName(RequestDistribution d);
absl::StatusOr<RequestDistribution> ParseDistribution(absl::string_view name);

// A workload's properties; the defaults are YCSB CoreWorkload's.
struct WorkloadSpec {
  std::string name = "custom";  // "a".."f" for the presets, "+farm" appended by the modifier

  int64_t record_count = 1000;  // recordcount (YCSB's workload files set 1000)
  int64_t operation_count = 0;  // operationcount; 0: the run is bounded by time instead
  int64_t insert_start = 0;     // insertstart: the first record number
  int field_count = 10;         // fieldcount
  int field_length = 100;       // fieldlength
  size_t key_size = 0;          // keysize (extension): 0 or 12..250, see record_format.h

  double read_proportion = 0.95;              // readproportion
  double update_proportion = 0.05;            // updateproportion
  double insert_proportion = 0.0;             // insertproportion
  double scan_proportion = 0.0;               // scanproportion
  double read_modify_write_proportion = 0.0;  // readmodifywriteproportion

  RequestDistribution request_distribution = RequestDistribution::kUniform;
  double zipfian_constant = ZipfianGenerator::kDefaultTheta;  // zipfianconstant (extension)
  double hotspot_data_fraction = 0.2;                         // hotspotdatafraction
  double hotspot_opn_fraction = 0.8;                          // hotspotopnfraction
  int max_scan_length = 1000;  // maxscanlength; scan lengths uniform in [1, max]

  size_t value_size() const { return static_cast<size_t>(field_count) * field_length; }
  // InvalidArgument naming the first property out of range.
  absl::Status Validate() const;
};

// YCSB's workloads/workloada .. workloadf: "a".."f" (or "workloada" ..), any case.
//   A  50% read, 50% update,            zipfian    (update heavy)
//   B  95% read,  5% update,            zipfian    (read mostly)
//   C 100% read,                        zipfian    (read only)
//   D  95% read,  5% insert,            latest     (read latest)
//   E  95% scan,  5% insert,            zipfian, maxscanlength=100  (short ranges)
//   F  50% read, 50% read-modify-write, zipfian
// NotFound for any other name.
absl::StatusOr<WorkloadSpec> PresetWorkload(absl::string_view name);

// The FaRM paper's key-value setting (NSDI 2014, evaluation): 16-byte keys and 32-byte
// values, i.e. keysize=16, fieldcount=1, fieldlength=32. Appends "+farm" to the name.
void ApplyFarmPreset(WorkloadSpec* spec);

// Sets one property by its YCSB name (the list above) from text. InvalidArgument for an
// unknown name or a value that does not parse; Validate() checks ranges.
absl::Status SetProperty(WorkloadSpec* spec, absl::string_view name, absl::string_view value);

// A per-thread chooser of record numbers for reads, updates, scans and read-modify-writes.
using KeyChooser = std::variant<UniformLongGenerator, ScrambledZipfianGenerator,
                                SkewedLatestGenerator, HotspotGenerator>;

// CoreWorkload: one run's shared state: the validated spec, the record format, the
// transaction-phase insert sequence (records record_count.. get inserted in that
// order), and what the per-thread key choosers are built from (zeta computed once).
//
// Thread-safety: after Create, every method may be called from any thread. The
// CoreWorkload must outlive every OpGenerator and KeyChooser made from it.
class CoreWorkload {
 public:
  // InvalidArgument when the spec does not validate or the key size cannot name every
  // record.
  static absl::StatusOr<std::unique_ptr<CoreWorkload>> Create(const WorkloadSpec& spec);

  CoreWorkload(const CoreWorkload&) = delete;
  CoreWorkload& operator=(const CoreWorkload&) = delete;

  const WorkloadSpec& spec() const { return spec_; }
  const RecordFormat& format() const { return format_; }
  AcknowledgedCounterGenerator& insert_sequence() { return insert_sequence_; }
  const AcknowledgedCounterGenerator& insert_sequence() const { return insert_sequence_; }

  // A fresh chooser for one client thread, as YCSB's CoreWorkload.init builds it:
  //   uniform: uniform over the loaded records;
  //   zipfian: scrambled zipfian over the loaded records plus the inserts expected
  //     (2 * operationcount * insertproportion; none for a time-bounded run), and a
  //     draw past the last record inserted is redrawn (OpGenerator does that);
  //   latest: skewed towards the last record inserted (insert_sequence);
  //   hotspot: hot set at the low end of the loaded records.
  KeyChooser NewKeyChooser() const;

 private:
  CoreWorkload(const WorkloadSpec& spec, RecordFormat format, double zetan);

  const WorkloadSpec spec_;
  const RecordFormat format_;
  AcknowledgedCounterGenerator insert_sequence_;
  // kLatest: zeta(record_count, theta); kZipfian: ScrambledZipfianGenerator::Zetan(theta).
  const double zetan_;
};

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_WORKLOAD_H_
