#include "tools/linkbench/properties.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace farm::linkbench {

absl::StatusOr<Properties> Properties::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read properties file ", path));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<Properties> Properties::Parse(absl::string_view text, const std::string& origin) {
  Properties props;
  props.origin_ = origin;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#' || line[0] == '!') continue;
    const size_t sep = line.find_first_of("=:");
    if (sep == absl::string_view::npos || sep == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", line_no, ": expected `key = value`, got \"", line, "\""));
    }
    props.values_[std::string(absl::StripAsciiWhitespace(line.substr(0, sep)))] =
        std::string(absl::StripAsciiWhitespace(line.substr(sep + 1)));
  }
  return props;
}

absl::StatusOr<std::string> Properties::GetString(const std::string& key) const {
  auto it = values_.find(key);
  if (it == values_.end()) {
    return absl::NotFoundError(absl::StrCat("property ", key, " is missing from ", origin_));
  }
  return it->second;
}

absl::StatusOr<double> Properties::GetDouble(const std::string& key) const {
  absl::StatusOr<std::string> s = GetString(key);
  if (!s.ok()) return s.status();
  double v;
  if (!absl::SimpleAtod(*s, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("property ", key, " = \"", *s, "\" in ", origin_,
                                                   " is not a number"));
  }
  return v;
}

absl::StatusOr<int64_t> Properties::GetInt(const std::string& key) const {
  absl::StatusOr<std::string> s = GetString(key);
  if (!s.ok()) return s.status();
  int64_t v;
  if (!absl::SimpleAtoi(*s, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("property ", key, " = \"", *s, "\" in ", origin_,
                                                   " is not an integer"));
  }
  return v;
}

absl::StatusOr<double> Properties::GetDouble(const std::string& key, double fallback) const {
  return Has(key) ? GetDouble(key) : absl::StatusOr<double>(fallback);
}

absl::StatusOr<int64_t> Properties::GetInt(const std::string& key, int64_t fallback) const {
  return Has(key) ? GetInt(key) : absl::StatusOr<int64_t>(fallback);
}

}  // namespace farm::linkbench
