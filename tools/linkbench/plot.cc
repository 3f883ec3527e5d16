#include "tools/linkbench/plot.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tools/common/gnuplot.h"

namespace farm::linkbench {

std::string GnuplotScript(const std::vector<RunRecord>& runs, const std::string& png_path) {
  std::string s = absl::StrCat("set terminal pngcairo size 1400,700 noenhanced\nset output '", png_path, "'\n");
  // Columns: op, then p50 and p99 of each run in order (no header row: it would plot).
  s += "$data << EOD\n";
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    s += kOpNames[i];
    for (const RunRecord& run : runs) {
      const ycsb::LatencyHistogram& h = run.requests.stats->latency[i];
      // Log scale: an empty op plots at a tiny value instead of 0.
      absl::StrAppendFormat(&s, " %.6f %.6f", std::max(1e-4, h.PercentileNs(50) / 1e6),
                            std::max(1e-4, h.PercentileNs(99) / 1e6));
    }
    s += "\n";
  }
  s += "EOD\n";
  s += "set title 'LinkBench request latency per operation (p50 solid, p99 hatched)'\n"
       "set ylabel 'latency (ms, log scale)'\nset logscale y\nset style data histogram\n"
       "set style histogram cluster gap 1\nset boxwidth 0.9\nset xtics rotate by -30\n"
       "set key outside right top\nset grid ytics\n";
  s += "plot ";
  for (size_t k = 0; k < runs.size(); ++k) {
    absl::StrAppendFormat(&s, "%s$data using %d:xtic(1) title '%s p50' fill solid 0.8 lc %d, "
                          "$data using %d title '%s p99' fill pattern 2 lc %d",
                          k ? ", " : "", 2 + 2 * k, runs[k].backend, k + 1, 3 + 2 * k, runs[k].backend, k + 1);
  }
  s += "\n";
  return s;
}

absl::Status WritePlot(const std::vector<RunRecord>& runs, const std::string& png_path, const std::string& gnuplot) {
  return tools::RunGnuplot(GnuplotScript(runs, png_path), png_path, gnuplot);
}

}  // namespace farm::linkbench
