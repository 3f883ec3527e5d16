// The linkbench binary end to end: a tiny graph on memory and mariadb, checking the
// report has every operation's line for each backend, the comparison and the JSON.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace {

struct Output {
  int status = -1;
  std::string text;
};

Output RunLinkbench(const std::string& args) {
  Output out;
  FILE* p = popen(absl::StrCat(LINKBENCH_BINARY, " ", args, " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.text.append(buf, n);
  const int st = pclose(p);
  out.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

TEST(DriverTest, MemoryAndMariadbReportEveryOperation) {
  const bool mariadb = access("/usr/sbin/mariadbd", X_OK) == 0;
  const std::string backends = mariadb ? "memory,mariadb" : "memory";
  const size_t runs = mariadb ? 2 : 1;
  const std::string json = absl::StrCat(testing::TempDir(), "/linkbench_driver_test.json");
  const Output out = RunLinkbench(absl::StrCat("--backend=", backends,
                                      " --nodes=1000 --requesters=2 --requests=2000 --loaders=2 --progress=false "
                                      "--json=", json));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("1000 nodes, 963868 links expected"), std::string::npos) << out.text;
  for (const char* op : {"ADD_LINK ", "DELETE_LINK ", "UPDATE_LINK ", "COUNT_LINK ", "MULTIGET_LINK ",
                         "GET_LINKS_LIST ", "ADD_NODE ", "UPDATE_NODE ", "DELETE_NODE ", "GET_NODE "}) {
    EXPECT_EQ(Occurrences(out.text, op), runs) << op << "\n" << out.text;
  }
  EXPECT_EQ(Occurrences(out.text, "Loaded 963868 links"), runs) << out.text;
  EXPECT_NE(out.text.find("REQUEST PHASE COMPLETED [memory]. 4000 requests"), std::string::npos) << out.text;
  if (mariadb) {
    EXPECT_NE(out.text.find("REQUEST PHASE COMPLETED [mariadb]. 4000 requests"), std::string::npos) << out.text;
    EXPECT_NE(out.text.find("COMPARISON (ratios against mariadb)"), std::string::npos) << out.text;
  }
  std::ifstream in(json);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_EQ(Occurrences(s.str(), "\"ops_per_s\""), runs) << s.str();
  EXPECT_EQ(Occurrences(s.str(), "\"GET_LINKS_LIST\""), runs);
}

TEST(DriverTest, TaoMixRuns) {
  const Output out = RunLinkbench("--backend=memory --mix=tao --nodes=10000 --requesters=2 --requests=5000 --progress=false");
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("(mix tao)"), std::string::npos);
  EXPECT_NE(out.text.find("GET_NODE "), std::string::npos);
}

TEST(DriverTest, BadFlagsAndFilesAreClearErrors) {
  Output out = RunLinkbench("--mix=bogus --nodes=100");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("--mix must be linkbench or tao"), std::string::npos) << out.text;
  out = RunLinkbench("--workload=/nonexistent/w.properties");
  EXPECT_EQ(out.status, 2);
  EXPECT_NE(out.text.find("cannot read properties file /nonexistent/w.properties"), std::string::npos) << out.text;
  out = RunLinkbench("--backend=nope --nodes=100 --requests=1 --requesters=1");
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("unknown backend \"nope\""), std::string::npos) << out.text;
}

}  // namespace
