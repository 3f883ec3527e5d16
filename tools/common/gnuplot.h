// Runs gnuplot (Debian: gnuplot-nox) as a subprocess on a script that writes a PNG:
// the benchmarks' plots (tools/linkbench, tools/ycsb).
#ifndef FARM_TOOLS_COMMON_GNUPLOT_H_
#define FARM_TOOLS_COMMON_GNUPLOT_H_

#include <string>

#include "absl/status/status.h"

namespace farm::tools {

// Feeds `script` to `gnuplot` on its standard input. NotFound when gnuplot is missing;
// Internal with its exit status (and `output`, the file the script writes) otherwise.
absl::Status RunGnuplot(const std::string& script, const std::string& output,
                        const std::string& gnuplot = "gnuplot");

}  // namespace farm::tools

#endif  // FARM_TOOLS_COMMON_GNUPLOT_H_
