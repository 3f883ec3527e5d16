#include "tools/ycsb/workload.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tools/ycsb/op_generator.h"
#include "tools/ycsb/record_format.h"

namespace farm::ycsb {
namespace {

WorkloadSpec Preset(const char* name) {
  absl::StatusOr<WorkloadSpec> s = PresetWorkload(name);
  EXPECT_TRUE(s.ok()) << s.status();
  return *s;
}

std::unique_ptr<CoreWorkload> MakeWorkload(const WorkloadSpec& spec) {
  absl::StatusOr<std::unique_ptr<CoreWorkload>> w = CoreWorkload::Create(spec);
  EXPECT_TRUE(w.ok()) << w.status();
  return *std::move(w);
}

TEST(PresetTest, StandardWorkloadsHaveYcsbsMixes) {
  struct Expected {
    const char* name;
    double read, update, insert, scan, rmw;
    RequestDistribution distribution;
  };
  const Expected all[] = {
      {"a", 0.5, 0.5, 0, 0, 0, RequestDistribution::kZipfian},
      {"b", 0.95, 0.05, 0, 0, 0, RequestDistribution::kZipfian},
      {"c", 1, 0, 0, 0, 0, RequestDistribution::kZipfian},
      {"d", 0.95, 0, 0.05, 0, 0, RequestDistribution::kLatest},
      {"e", 0, 0, 0.05, 0.95, 0, RequestDistribution::kZipfian},
      {"f", 0.5, 0, 0, 0, 0.5, RequestDistribution::kZipfian},
  };
  for (const Expected& e : all) {
    const WorkloadSpec s = Preset(e.name);
    EXPECT_EQ(s.read_proportion, e.read) << e.name;
    EXPECT_EQ(s.update_proportion, e.update) << e.name;
    EXPECT_EQ(s.insert_proportion, e.insert) << e.name;
    EXPECT_EQ(s.scan_proportion, e.scan) << e.name;
    EXPECT_EQ(s.read_modify_write_proportion, e.rmw) << e.name;
    EXPECT_EQ(s.request_distribution, e.distribution) << e.name;
    EXPECT_EQ(s.record_count, 1000);
    EXPECT_EQ(s.field_count, 10);
    EXPECT_EQ(s.field_length, 100);
    EXPECT_TRUE(s.Validate().ok());
  }
  EXPECT_EQ(Preset("e").max_scan_length, 100);  // workloads/workloade
  EXPECT_EQ(Preset("a").max_scan_length, 1000);
  EXPECT_EQ(Preset("WorkloadB").name, "b");
  EXPECT_EQ(PresetWorkload("g").status().code(), absl::StatusCode::kNotFound);
}

TEST(PresetTest, FarmPresetIsSixteenByteKeysAndThirtyTwoByteValues) {
  WorkloadSpec s = Preset("c");
  ApplyFarmPreset(&s);
  EXPECT_EQ(s.name, "c+farm");
  EXPECT_EQ(s.key_size, 16u);
  EXPECT_EQ(s.value_size(), 32u);
  EXPECT_EQ(MakeWorkload(s)->format().max_key_bytes(), 16u);
}

TEST(PropertyTest, SetsByYcsbNameAndRejectsTheRest) {
  WorkloadSpec s;
  ASSERT_TRUE(SetProperty(&s, "recordcount", "5000").ok());
  ASSERT_TRUE(SetProperty(&s, "readproportion", "0.25").ok());
  ASSERT_TRUE(SetProperty(&s, "requestdistribution", "hotspot").ok());
  ASSERT_TRUE(SetProperty(&s, "insertorder", "hashed").ok());
  EXPECT_EQ(s.record_count, 5000);
  EXPECT_EQ(s.read_proportion, 0.25);
  EXPECT_EQ(s.request_distribution, RequestDistribution::kHotspot);
  EXPECT_EQ(SetProperty(&s, "recordcount", "many").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetProperty(&s, "nosuchproperty", "1").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SetProperty(&s, "scanlengthdistribution", "zipfian").code(),
            absl::StatusCode::kInvalidArgument);
  s.zipfian_constant = 1.0;
  EXPECT_EQ(s.Validate().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RecordFormatTest, KeysAreUniqueAndSized) {
  for (const size_t key_size : {size_t{0}, size_t{12}, size_t{16}, size_t{40}}) {
    absl::StatusOr<RecordFormat> f = RecordFormat::Create(key_size, 32);
    ASSERT_TRUE(f.ok()) << f.status();
    std::vector<char> buf(f->max_key_bytes());
    std::set<std::string> keys;
    for (int64_t k = 0; k < 200000; ++k) {
      const absl::string_view key = f->Key(k, absl::MakeSpan(buf));
      ASSERT_TRUE(absl::StartsWith(key, "user")) << key;
      if (key_size != 0) {
        ASSERT_EQ(key.size(), key_size) << key;
      }
      ASSERT_LE(key.size(), f->max_key_bytes());
      keys.emplace(key);
    }
    EXPECT_EQ(keys.size(), 200000u) << "key size " << key_size;
  }
  EXPECT_FALSE(RecordFormat::Create(11, 32).ok());
  EXPECT_FALSE(RecordFormat::Create(251, 32).ok());
  EXPECT_FALSE(RecordFormat::Create(16, 0).ok());
  EXPECT_EQ(RecordFormat::Create(12, 1)->key_space(), int64_t{1} << 32);
}

TEST(RecordFormatTest, ValuesBelongToTheirRecord) {
  for (const size_t size : {size_t{4}, size_t{32}, size_t{1000}}) {
    const RecordFormat f = *RecordFormat::Create(16, size);
    std::vector<char> buf(size);
    const std::string v(f.Value(123456, 99, absl::MakeSpan(buf)));
    EXPECT_EQ(v.size(), size);
    EXPECT_TRUE(f.ValueBelongsTo(123456, v));
    EXPECT_FALSE(f.ValueBelongsTo(123457, v));
    EXPECT_FALSE(f.ValueBelongsTo(123456, v.substr(1)));
    for (const char c : v) EXPECT_TRUE(c >= ' ' && c <= '~');
    // Another salt, other filler, same tag.
    const std::string w(f.Value(123456, 100, absl::MakeSpan(buf)));
    EXPECT_TRUE(f.ValueBelongsTo(123456, w));
    if (size > RecordFormat::kTagBytes) {
      EXPECT_NE(v, w);
    }
  }
}

TEST(OpGeneratorTest, MixMatchesProportions) {
  WorkloadSpec s;
  s.read_proportion = 0.3;
  s.update_proportion = 0.2;
  s.insert_proportion = 0.1;
  s.scan_proportion = 0.15;
  s.read_modify_write_proportion = 0.25;
  s.max_scan_length = 10;
  std::unique_ptr<CoreWorkload> w = MakeWorkload(s);
  OpGenerator gen(*w, 1);
  std::map<OpType, int> counts;
  constexpr int kOps = 200000;
  for (int i = 0; i < kOps; ++i) {
    const Op op = gen.Next();
    ++counts[op.type];
    if (op.type == OpType::kInsert) {
      ASSERT_TRUE(gen.AcknowledgeInsert(op).ok());
    } else {
      ASSERT_LE(op.keynum, w->insert_sequence().Last());
      ASSERT_GE(op.keynum, 0);
    }
    if (op.type == OpType::kScan) {
      ASSERT_GE(op.scan_length, 1);
      ASSERT_LE(op.scan_length, 10);
      ASSERT_LE(op.keynum + op.scan_length - 1, w->insert_sequence().Last());
    }
  }
  EXPECT_NEAR(counts[OpType::kRead] / double{kOps}, 0.3, 0.01);
  EXPECT_NEAR(counts[OpType::kUpdate] / double{kOps}, 0.2, 0.01);
  EXPECT_NEAR(counts[OpType::kInsert] / double{kOps}, 0.1, 0.01);
  EXPECT_NEAR(counts[OpType::kScan] / double{kOps}, 0.15, 0.01);
  EXPECT_NEAR(counts[OpType::kReadModifyWrite] / double{kOps}, 0.25, 0.01);
  // Inserts took the record numbers after the loaded ones, in order.
  EXPECT_EQ(w->insert_sequence().Last(), s.record_count + counts[OpType::kInsert] - 1);
}

TEST(OpGeneratorTest, SameSeedSameOperations) {
  std::unique_ptr<CoreWorkload> w = MakeWorkload(Preset("a"));
  OpGenerator a(*w, 5), b(*w, 5), c(*w, 6);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const Op x = a.Next(), y = b.Next(), z = c.Next();
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.keynum, y.keynum);
    differs |= x.keynum != z.keynum;
  }
  EXPECT_TRUE(differs);
}

TEST(OpGeneratorTest, WorkloadDReadsTheLatestInserts) {
  std::unique_ptr<CoreWorkload> w = MakeWorkload(Preset("d"));
  OpGenerator gen(*w, 3);
  int recent = 0, reads = 0;
  for (int i = 0; i < 20000; ++i) {
    const Op op = gen.Next();
    if (op.type == OpType::kInsert) {
      ASSERT_TRUE(gen.AcknowledgeInsert(op).ok());
      continue;
    }
    ++reads;
    if (op.keynum > w->insert_sequence().Last() - 10) ++recent;
  }
  // Zipfian over ~2000 records: the 10 newest get well over a third of the reads.
  EXPECT_GT(recent, reads * 0.35);
}

TEST(OpGeneratorTest, ScanKeysAreConsecutiveRecords) {
  WorkloadSpec s = Preset("e");
  ApplyFarmPreset(&s);
  std::unique_ptr<CoreWorkload> w = MakeWorkload(s);
  OpGenerator gen(*w, 8);
  KeyBatch batch(static_cast<size_t>(s.max_scan_length), w->format().max_key_bytes());
  std::vector<char> key(w->format().max_key_bytes());
  Op op;
  do op = gen.Next();
  while (op.type != OpType::kScan);
  gen.ScanKeys(op, &batch);
  ASSERT_EQ(batch.size(), static_cast<size_t>(op.scan_length));
  for (size_t i = 0; i < batch.size(); ++i) {
    EXPECT_EQ(batch.key(i), gen.Key(op.keynum + static_cast<int64_t>(i), absl::MakeSpan(key)));
    EXPECT_EQ(absl::string_view(batch.pointers()[i], batch.lengths()[i]), batch.key(i));
  }
}

}  // namespace
}  // namespace farm::ycsb
