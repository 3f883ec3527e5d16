// The layering check: every project #include of a source tree against the table in
// LAYERS.txt (which folder may include which). Used by layering_test.
#ifndef FARM_TESTS_LAYERING_LAYERING_H_
#define FARM_TESTS_LAYERING_LAYERING_H_

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::testing {

struct LayerTable {
  // folder -> folders it may include; "*" allows every folder.
  std::map<std::string, std::set<std::string>> allowed;
  // (file, included header) pairs allowed although the table forbids them.
  std::set<std::pair<std::string, std::string>> exceptions;
  // header -> the only folders besides its own whose files may include it (a header of
  // a layer that is not for every layer above it).
  std::map<std::string, std::set<std::string>> private_headers;

  // The longest folder of the table that holds `path` ("" when none does). A file
  // named *_test.cc is a test wherever it lives: it belongs to "tests".
  std::string FolderOf(absl::string_view path) const;
};

// Parses LAYERS.txt: "folder: dep dep ...", "except FILE HEADER", "private HEADER:
// folder folder ...", '#' comments.
// InvalidArgument naming the line for anything else or a dependency on an unlisted
// folder.
absl::StatusOr<LayerTable> ParseLayerTable(absl::string_view text);

struct Violation {
  std::string file;  // relative to the tree's root
  int line = 0;
  std::string included;
  std::string message;  // "kv may not include tx (tx/transaction.h)"
};

// Checks every .h and .cc file under `root` (except build/ and hidden folders): a
// quoted #include whose first component is a top folder of the table must name a
// folder the file's folder may include. Also reports each exception of the table that
// no longer occurs (so the list only shrinks). NotFound when root cannot be read.
absl::StatusOr<std::vector<Violation>> CheckLayering(const std::string& root,
                                                     const LayerTable& table);

}  // namespace farm::testing

#endif  // FARM_TESTS_LAYERING_LAYERING_H_
