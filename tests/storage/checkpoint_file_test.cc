// Checkpoint files: whole or absent (a crash before Finish leaves nothing in place),
// every byte checked when read, and refused when damaged, cut or another node's.
#include "farm/storage/checkpoint_file.h"

#include <string>

#include "absl/strings/str_cat.h"

#include "farm/storage/fault_injecting_file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm::storage {
namespace {

using ::testing::HasSubstr;

constexpr uint64_t kIdentity = 42;
const std::string kPath = "/data/region-7.ckpt";

CheckpointInfo Info() { return CheckpointInfo{kIdentity, 7, 1 << 20, 12345}; }

absl::Status WriteThree(FileSystem& fs, bool finish = true) {
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> w = CheckpointWriter::Start(&fs, kPath, Info());
  if (!w.ok()) return w.status();
  for (int i = 0; i < 3; ++i) {
    if (absl::Status s = (*w)->AddChunk(uint64_t(i) * 4096, std::string(1000 + i, char('a' + i))); !s.ok()) return s;
  }
  return finish ? (*w)->Finish() : absl::OkStatus();
}

TEST(CheckpointFileTest, RoundTripsEveryChunkAndTheReplayPosition) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/data").ok());
  ASSERT_TRUE(WriteThree(fs).ok());
  absl::StatusOr<Checkpoint> c = ReadCheckpoint(&fs, kPath, kIdentity);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->info.region, 7u);
  EXPECT_EQ(c->info.region_bytes, uint64_t{1} << 20);
  EXPECT_EQ(c->info.replay_from, 12345u);
  ASSERT_EQ(c->chunks.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(c->chunks[i].offset, uint64_t(i) * 4096);
    EXPECT_EQ(c->chunks[i].bytes, std::string(1000 + i, char('a' + i)));
  }
  absl::StatusOr<std::vector<std::string>> names = fs.List("/data");
  ASSERT_TRUE(names.ok());
  EXPECT_THAT(*names, ::testing::ElementsAre("region-7.ckpt")) << "no temporary left";
}

TEST(CheckpointFileTest, ACrashBeforeFinishLeavesNoCheckpointInPlace) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/data").ok());
  ASSERT_TRUE(WriteThree(fs, /*finish=*/false).ok());
  fs.Restart();
  EXPECT_TRUE(absl::IsNotFound(ReadCheckpoint(&fs, kPath, kIdentity).status()));
  // And the next checkpoint starts over the leftover temporary.
  ASSERT_TRUE(WriteThree(fs).ok());
  EXPECT_TRUE(ReadCheckpoint(&fs, kPath, kIdentity).ok());
  // A crash at Finish's sync: the old complete checkpoint stays.
  fs.CrashAtSync(1);
  EXPECT_FALSE(WriteThree(fs).ok());
  fs.Restart();
  EXPECT_TRUE(ReadCheckpoint(&fs, kPath, kIdentity).ok());
}

TEST(CheckpointFileTest, DamageIncompletenessAndStrangersAreRefused) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/data").ok());
  ASSERT_TRUE(WriteThree(fs).ok());
  EXPECT_EQ(ReadCheckpoint(&fs, kPath, kIdentity + 1).status().code(), absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::string> bytes = fs.ReadFile(kPath);
  ASSERT_TRUE(bytes.ok());
  // A byte of the second chunk.
  const uint64_t second = 56 + 16 + 1000;
  ASSERT_TRUE(fs.Corrupt(kPath, second + 16 + 10, "#").ok());
  absl::StatusOr<Checkpoint> damaged = ReadCheckpoint(&fs, kPath, kIdentity);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr(absl::StrCat("chunk at offset ", second)));
  EXPECT_THAT(damaged.status().message(), HasSubstr(kPath));
  // Cut before its trailer.
  ASSERT_TRUE(fs.Corrupt(kPath, second + 16 + 10, std::string(1, (*bytes)[second + 16 + 10])).ok());
  ASSERT_TRUE(fs.Truncate(kPath, bytes->size() - 24).ok());
  EXPECT_THAT(ReadCheckpoint(&fs, kPath, kIdentity).status().message(), HasSubstr("incomplete"));
}

TEST(CheckpointFileTest, ChunksOutsideTheRegionAreRefusedWhenWritten) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(fs.CreateDir("/data").ok());
  absl::StatusOr<std::unique_ptr<CheckpointWriter>> w = CheckpointWriter::Start(&fs, kPath, Info());
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->AddChunk((1 << 20) - 10, std::string(11, 'x')).code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE((*w)->AddChunk((1 << 20) - 10, std::string(10, 'x')).ok());
  EXPECT_TRUE((*w)->Finish().ok());
  EXPECT_EQ((*w)->Finish().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace farm::storage
