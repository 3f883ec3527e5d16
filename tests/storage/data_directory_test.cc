// A data directory knows whose it is: created once, accepted for its own cluster and
// node, refused for another's or another format's, and refused when damaged.
#include "farm/storage/data_directory.h"

#include <filesystem>
#include <string>

#include "farm/storage/fault_injecting_file_system.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace farm::storage {
namespace {

using ::testing::HasSubstr;

TEST(DataDirectoryTest, CreatedOnceThenAcceptedForItsOwnerOnly) {
  FaultInjectingFileSystem fs;
  absl::StatusOr<DataDirectory> fresh = DataDirectory::Open(&fs, "/d/node-1", "prod", 1);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_TRUE(fresh->created());
  absl::StatusOr<DataDirectory> again = DataDirectory::Open(&fs, "/d/node-1", "prod", 1);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->created());
  EXPECT_EQ(again->identity(), fresh->identity());

  absl::StatusOr<DataDirectory> other_node = DataDirectory::Open(&fs, "/d/node-1", "prod", 2);
  EXPECT_EQ(other_node.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_node.status().message(), HasSubstr("belongs to node 1 of cluster 'prod', not to node 2"));
  absl::StatusOr<DataDirectory> other_cluster = DataDirectory::Open(&fs, "/d/node-1", "test", 1);
  EXPECT_EQ(other_cluster.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(other_cluster.status().message(), HasSubstr("cluster 'prod'"));

  // Identities differ between nodes and clusters (they go into every log header).
  absl::StatusOr<DataDirectory> two = DataDirectory::Open(&fs, "/d/node-2", "prod", 2);
  absl::StatusOr<DataDirectory> test_one = DataDirectory::Open(&fs, "/d/test-1", "test", 1);
  ASSERT_TRUE(two.ok() && test_one.ok());
  EXPECT_NE(two->identity(), fresh->identity());
  EXPECT_NE(test_one->identity(), fresh->identity());
}

TEST(DataDirectoryTest, DamagedOrFutureIdentityFilesAreRefused) {
  FaultInjectingFileSystem fs;
  ASSERT_TRUE(DataDirectory::Open(&fs, "/d", "prod", 1).ok());
  ASSERT_TRUE(fs.Corrupt("/d/FARMDATA", 21, "X").ok());  // a byte of the cluster name
  absl::StatusOr<DataDirectory> damaged = DataDirectory::Open(&fs, "/d", "prod", 1);
  EXPECT_EQ(damaged.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(damaged.status().message(), HasSubstr("/d/FARMDATA"));

  FaultInjectingFileSystem fs2;
  ASSERT_TRUE(DataDirectory::Open(&fs2, "/d", "prod", 1).ok());
  ASSERT_TRUE(fs2.Corrupt("/d/FARMDATA", 8, std::string("\x02", 1)).ok());  // format 2, checksum now wrong
  EXPECT_EQ(DataDirectory::Open(&fs2, "/d", "prod", 1).status().code(), absl::StatusCode::kDataLoss);
}

TEST(DataDirectoryTest, AStartThatDiedBeforeTheRenameLeavesNoIdentity) {
  FaultInjectingFileSystem fs;
  fs.CrashAtSync(1);  // the machine stops while the identity file is written
  EXPECT_FALSE(DataDirectory::Open(&fs, "/d", "prod", 1).ok());
  fs.Restart();
  absl::StatusOr<DataDirectory> d = DataDirectory::Open(&fs, "/d", "prod", 1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(d->created());
}

TEST(DataDirectoryTest, OnARealDirectory) {
  const std::string dir = ::testing::TempDir() + "farm_datadir_" + std::to_string(::getpid());
  std::unique_ptr<FileSystem> fs = NewPosixFileSystem();
  ASSERT_TRUE(DataDirectory::Open(fs.get(), dir, "prod", 3).ok());
  EXPECT_TRUE(DataDirectory::Open(fs.get(), dir, "prod", 3).ok());
  EXPECT_EQ(DataDirectory::Open(fs.get(), dir, "prod", 4).status().code(), absl::StatusCode::kFailedPrecondition);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace farm::storage
