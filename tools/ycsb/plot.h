// Plot: one invocation's runs as two bar charts side by side, grouped by workload with
// one bar per backend: throughput (ops/s) and READ p99 latency (µs), both log scale;
// rendered to a PNG by gnuplot (tools/common/gnuplot.h). Only written with --plot.
#ifndef FARM_TOOLS_YCSB_PLOT_H_
#define FARM_TOOLS_YCSB_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/ycsb/report.h"

namespace farm::ycsb {

// The gnuplot script (its data inline) for `reports`. A backend without a run of some
// workload, or a run without READs, plots nothing there.
std::string GnuplotScript(const std::vector<RunReport>& reports, const std::string& png_path);
// Runs gnuplot on it: NotFound when gnuplot is missing.
absl::Status WritePlot(const std::vector<RunReport>& reports, const std::string& png_path,
                       const std::string& gnuplot = "gnuplot");

}  // namespace farm::ycsb

#endif  // FARM_TOOLS_YCSB_PLOT_H_
