// Plot: per-operation p50 and p99 latency bars, one cluster per operation and one bar
// pair per backend (log scale), rendered to a PNG by gnuplot (Debian: gnuplot-nox) run
// as a subprocess. Only called when --plot is given.
#ifndef FARM_TOOLS_LINKBENCH_PLOT_H_
#define FARM_TOOLS_LINKBENCH_PLOT_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/linkbench/report.h"

namespace farm::linkbench {

// The gnuplot script (with its data inline) for `runs`.
std::string GnuplotScript(const std::vector<RunRecord>& runs, const std::string& png_path);
// Runs `gnuplot` on the script. NotFound when gnuplot is missing; Internal with its
// exit status otherwise.
absl::Status WritePlot(const std::vector<RunRecord>& runs, const std::string& png_path,
                       const std::string& gnuplot = "gnuplot");

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_PLOT_H_
