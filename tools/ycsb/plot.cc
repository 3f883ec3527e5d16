#include "tools/ycsb/plot.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/common/gnuplot.h"

namespace farm::ycsb {
namespace {

// Adds `name` to `names` unless it is there; its index.
size_t IndexOf(std::vector<std::string>& names, const std::string& name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) return it - names.begin();
  names.push_back(name);
  return names.size() - 1;
}

double ReadP99(const RunReport& r) {
  for (const OpTypeReport& o : r.per_op) {
    if (o.type == OpType::kRead && o.ops > 0) return o.latency.p99_us;
  }
  return 0;
}

}  // namespace

std::string GnuplotScript(const std::vector<RunReport>& reports, const std::string& png_path) {
  std::vector<std::string> workloads, backends;
  for (const RunReport& r : reports) {
    IndexOf(workloads, r.workload);
    IndexOf(backends, r.backend);
  }
  // ops[w][b], p99[w][b]; NaN (gnuplot skips it) where a backend did not run a workload.
  std::vector<std::vector<std::string>> ops(workloads.size(), std::vector<std::string>(backends.size(), "NaN"));
  std::vector<std::vector<std::string>> p99 = ops;
  for (const RunReport& r : reports) {
    const size_t w = IndexOf(workloads, r.workload), b = IndexOf(backends, r.backend);
    if (r.throughput > 0) ops[w][b] = absl::StrFormat("%.1f", r.throughput);
    if (const double p = ReadP99(r); p > 0) p99[w][b] = absl::StrFormat("%.2f", p);
  }
  std::string s = absl::StrCat("set terminal pngcairo size 1400,600 noenhanced\nset output '", png_path, "'\n");
  for (const auto& [name, table] : {std::pair{"ops", &ops}, std::pair{"p99", &p99}}) {
    absl::StrAppend(&s, "$", name, " << EOD\n");
    for (size_t w = 0; w < workloads.size(); ++w) {
      s += workloads[w];
      for (const std::string& v : (*table)[w]) absl::StrAppend(&s, " ", v);
      s += "\n";
    }
    s += "EOD\n";
  }
  s += "set multiplot layout 1,2\nset style data histogram\nset style histogram cluster gap 1\n"
       "set style fill solid 0.8\nset boxwidth 0.9\nset logscale y\nset grid ytics\n"
       "set key outside bottom center horizontal\n";
  for (const auto& [table, title, ylabel] :
       {std::tuple{"ops", "YCSB throughput per workload", "operations/s (log scale)"},
        std::tuple{"p99", "YCSB READ p99 per workload", "READ p99 latency (us, log scale)"}}) {
    absl::StrAppend(&s, "set title '", title, "'\nset ylabel '", ylabel, "'\nplot ");
    for (size_t b = 0; b < backends.size(); ++b) {
      absl::StrAppendFormat(&s, "%s$%s using %d:xtic(1) title '%s' lc %d", b ? ", " : "", table, b + 2,
                            backends[b], b + 1);
    }
    s += "\n";
  }
  s += "unset multiplot\n";
  return s;
}

absl::Status WritePlot(const std::vector<RunReport>& reports, const std::string& png_path,
                       const std::string& gnuplot) {
  return tools::RunGnuplot(GnuplotScript(reports, png_path), png_path, gnuplot);
}

}  // namespace farm::ycsb
