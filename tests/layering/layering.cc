#include "tests/layering/layering.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace farm::testing {
namespace fs = std::filesystem;
namespace {

// The header of a line `#include "header"` (spaces allowed around '#'), else "".
std::string QuotedInclude(absl::string_view line) {
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "#")) return "";
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "include")) return "";
  line = absl::StripLeadingAsciiWhitespace(line);
  if (!absl::ConsumePrefix(&line, "\"")) return "";
  const size_t end = line.find('"');
  return end == absl::string_view::npos ? "" : std::string(line.substr(0, end));
}

}  // namespace

std::string LayerTable::FolderOf(absl::string_view path) const {
  if (absl::EndsWith(path, "_test.cc") && allowed.contains("tests")) return "tests";
  std::string best;
  for (const auto& [folder, deps] : allowed) {
    if ((path == folder || absl::StartsWith(path, folder + "/")) && folder.size() > best.size())
      best = folder;
  }
  return best;
}

absl::StatusOr<LayerTable> ParseLayerTable(absl::string_view text) {
  LayerTable table;
  int number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++number;
    line = absl::StripAsciiWhitespace(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words[0] == "except") {
      if (words.size() != 3) {
        return absl::InvalidArgumentError(
            absl::StrCat("LAYERS.txt line ", number, ": expected 'except FILE HEADER'"));
      }
      table.exceptions.emplace(words[1], words[2]);
      continue;
    }
    if (words[0] == "private") {
      if (words.size() < 3 || !absl::EndsWith(words[1], ":")) {
        return absl::InvalidArgumentError(
            absl::StrCat("LAYERS.txt line ", number, ": expected 'private HEADER: folder ...'"));
      }
      table.private_headers[words[1].substr(0, words[1].size() - 1)].insert(words.begin() + 2, words.end());
      continue;
    }
    if (!absl::EndsWith(words[0], ":")) {
      return absl::InvalidArgumentError(
          absl::StrCat("LAYERS.txt line ", number, ": expected 'folder: deps...'"));
    }
    std::set<std::string>& deps = table.allowed[words[0].substr(0, words[0].size() - 1)];
    deps.insert(words.begin() + 1, words.end());
  }
  for (const auto& [folder, deps] : table.allowed) {
    for (const std::string& dep : deps) {
      if (dep != "*" && !table.allowed.contains(dep)) {
        return absl::InvalidArgumentError(
            absl::StrCat("LAYERS.txt: ", folder, " depends on unlisted folder ", dep));
      }
    }
  }
  for (const auto& [header, folders] : table.private_headers) {
    for (const std::string& folder : folders) {
      if (!table.allowed.contains(folder)) {
        return absl::InvalidArgumentError(
            absl::StrCat("LAYERS.txt: private ", header, " names unlisted folder ", folder));
      }
    }
  }
  return table;
}

absl::StatusOr<std::vector<Violation>> CheckLayering(const std::string& root,
                                                     const LayerTable& table) {
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    return absl::NotFoundError(absl::StrCat("no source tree at ", root));
  std::set<std::string> tops;
  for (const auto& [folder, deps] : table.allowed) tops.insert(folder.substr(0, folder.find('/')));
  std::vector<Violation> violations;
  std::set<std::pair<std::string, std::string>> used;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == "build" || absl::StartsWith(name, "."))) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !(absl::EndsWith(name, ".h") || absl::EndsWith(name, ".cc")))
      continue;
    const std::string file = fs::relative(it->path(), root).generic_string();
    const std::string folder = table.FolderOf(file);
    if (folder.empty()) continue;
    const std::set<std::string>& deps = table.allowed.at(folder);
    if (deps.contains("*")) continue;
    std::ifstream in(it->path());
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      const std::string included = QuotedInclude(line);
      if (included.empty()) continue;
      if (!tops.contains(included.substr(0, included.find('/')))) continue;  // not the project's
      const std::string target = table.FolderOf(included);
      if (auto p = table.private_headers.find(included);
          p != table.private_headers.end() && target != folder && !p->second.contains(folder)) {
        violations.push_back(Violation{file, number, included,
                                       absl::StrCat(folder, " may not include ", included,
                                                    " (private to ", absl::StrJoin(p->second, " "), ")")});
        continue;
      }
      if (target == folder || deps.contains(target)) continue;
      if (table.exceptions.contains({file, included})) {
        used.emplace(file, included);
        continue;
      }
      violations.push_back(Violation{
          file, number, included,
          absl::StrCat(folder, " may not include ", target.empty() ? "an unlisted folder" : target,
                       " (", included, ")")});
    }
  }
  for (const auto& [file, included] : table.exceptions) {
    if (!used.contains({file, included})) {
      violations.push_back(Violation{
          file, 0, included,
          "listed as an exception in LAYERS.txt but no longer included: remove the line"});
    }
  }
  return violations;
}

}  // namespace farm::testing
