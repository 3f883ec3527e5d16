// The command line of the project's binaries (farm_node and tools/): Abseil flags with a
// --help that lists the binary's own flags.
//
// Abseil's --help lists the flags of a source file named after the program (farm_node:
// farm_node_main.cc); a tool whose flags live in main.cc got "No flags matched". Here
// --help and --helpshort list every flag defined outside Abseil itself, after `usage`.
#ifndef FARM_BASE_COMMAND_LINE_H_
#define FARM_BASE_COMMAND_LINE_H_

#include <vector>

#include "absl/strings/string_view.h"

namespace farm {

// Sets the usage text and parses argv as absl::ParseCommandLine does (exits on --help
// and on a bad flag); returns the positional arguments, argv[0] first. Also sets up the
// process's log (farm/base/log.h) from --log_level (default info) and --log_file
// (default stderr); exits with status 2 on a bad level or a file it cannot open.
std::vector<char*> ParseCommandLine(int argc, char** argv, absl::string_view usage);

}  // namespace farm

#endif  // FARM_BASE_COMMAND_LINE_H_
