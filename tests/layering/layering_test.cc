// The tree keeps the layers of LAYERS.txt; and the check catches what it must: a
// violating #include injected into a copy of the tree, and a stale exception.
#include "tests/layering/layering.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace farm::testing {
namespace {
namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

LayerTable Table() {
  absl::StatusOr<LayerTable> table =
      ParseLayerTable(ReadFile(fs::path(FARM_SOURCE_DIR) / "LAYERS.txt"));
  EXPECT_TRUE(table.ok()) << table.status();
  return table.ok() ? *table : LayerTable{};
}

TEST(LayeringTest, TheTreeKeepsItsLayers) {
  const LayerTable table = Table();
  ASSERT_TRUE(table.allowed.contains("kv"));
  absl::StatusOr<std::vector<Violation>> violations = CheckLayering(FARM_SOURCE_DIR, table);
  ASSERT_TRUE(violations.ok()) << violations.status();
  for (const Violation& v : *violations)
    ADD_FAILURE() << v.file << ":" << v.line << ": " << v.message;
}

// A copy of the tree's sources with one bad #include added to kv/ (an application
// reaching into the transaction layer) and one exception gone stale.
TEST(LayeringTest, AnInjectedViolationIsCaught) {
  const fs::path copy = fs::path(::testing::TempDir()) / absl::StrCat("layering_", ::getpid());
  fs::remove_all(copy);
  fs::create_directories(copy);
  for (const char* folder :
       {"farm", "tx", "alloc", "membership", "kv", "services", "tools", "examples", "tests"}) {
    fs::copy(fs::path(FARM_SOURCE_DIR) / folder, copy / folder, fs::copy_options::recursive);
  }
  LayerTable table = Table();
  absl::StatusOr<std::vector<Violation>> clean = CheckLayering(copy.string(), table);
  ASSERT_TRUE(clean.ok()) << clean.status();
  ASSERT_TRUE(clean->empty()) << clean->front().file << ": " << clean->front().message;

  {
    std::ofstream bad(copy / "kv" / "table_reader.cc", std::ios::app);
    bad << "#include \"tx/transaction.h\"\n";
  }
  {
    // An application taking hold of the node through the API's private door.
    std::ofstream bad(copy / "kv" / "table_host.cc", std::ios::app);
    bad << "#include \"farm/api/node_host.h\"\n";
  }
  table.exceptions.emplace("kv/layout.h", "farm/alloc_gone.h");
  absl::StatusOr<std::vector<Violation>> caught = CheckLayering(copy.string(), table);
  ASSERT_TRUE(caught.ok()) << caught.status();
  ASSERT_EQ(caught->size(), 3u);
  for (const Violation& v : *caught) {
    if (v.file == "kv/table_reader.cc") {
      EXPECT_EQ(v.included, "tx/transaction.h");
      EXPECT_GT(v.line, 1);
      EXPECT_EQ(v.message, "kv may not include tx (tx/transaction.h)");
    } else if (v.file == "kv/table_host.cc") {
      EXPECT_EQ(v.included, "farm/api/node_host.h");
      EXPECT_EQ(v.message.rfind("kv may not include farm/api/node_host.h (private to ", 0), 0u) << v.message;
    } else {
      EXPECT_EQ(v.file, "kv/layout.h");
      EXPECT_NE(v.message.find("no longer included"), std::string::npos) << v.message;
    }
  }
  fs::remove_all(copy);
}

TEST(LayeringTest, BadTablesAreRefused) {
  EXPECT_FALSE(ParseLayerTable("kv farm/api\n").ok());
  EXPECT_FALSE(ParseLayerTable("kv: farm/api\n").ok());  // farm/api is not listed
  EXPECT_FALSE(ParseLayerTable("except kv/a.h\n").ok());
  EXPECT_FALSE(ParseLayerTable("kv:\nprivate kv/a.h kv\n").ok());      // no colon
  EXPECT_FALSE(ParseLayerTable("kv:\nprivate kv/a.h: graph\n").ok());  // unlisted folder
  absl::StatusOr<LayerTable> t = ParseLayerTable("farm/api:\nkv: farm/api  # apps\ntests: *\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->FolderOf("kv/resp/x.h"), "kv");
  EXPECT_EQ(t->FolderOf("kv/x_test.cc"), "tests");
  EXPECT_EQ(t->FolderOf("graph/x.h"), "");
}

}  // namespace
}  // namespace farm::testing
