#include "tools/linkbench/distribution_data.h"

#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace farm::linkbench {

absl::StatusOr<DistributionData> DistributionData::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read distribution data file ", path));
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

absl::StatusOr<DistributionData> DistributionData::Parse(const std::string& text,
                                                         const std::string& origin) {
  DistributionData data;
  std::istringstream in(text);
  std::string token;
  Cdf* current = nullptr;
  std::string pending_value;  // a value token waiting for its percentage
  while (in >> token) {
    int64_t value;
    if (absl::SimpleAtoi(token, &value)) {
      if (current == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ": a number (", token, ") before the first section name"));
      }
      std::string percent_token;
      double percent;
      if (!(in >> percent_token) || !absl::SimpleAtod(percent_token, &percent)) {
        return absl::InvalidArgumentError(absl::StrCat(
            origin, ": expected a percentage after value ", token, ", found \"", percent_token, "\""));
      }
      current->push_back({value, percent / 100});
      continue;
    }
    static const char* const kNames[] = {"nlinks", "link_nreads", "link_nwrites", "node_nreads",
                                         "node_nwrites"};
    bool known = false;
    for (const char* name : kNames) known |= token == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ": unexpected token \"", token, "\", expected a distribution name"));
    }
    current = &data.cdfs_[token];
    current->clear();
  }
  for (const auto& [name, cdf] : data.cdfs_) {
    if (cdf.empty()) return absl::InvalidArgumentError(absl::StrCat(origin, ": section ", name, " is empty"));
  }
  if (data.Find("nlinks") == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(origin, ": no nlinks section"));
  }
  return data;
}

const Cdf* DistributionData::Find(const std::string& name) const {
  auto it = cdfs_.find(name);
  return it == cdfs_.end() ? nullptr : &it->second;
}

size_t CdfSearch(const Cdf& cdf, double p) {
  size_t left = 0, right = cdf.size() - 1;
  while (left < right) {
    const size_t mid = (left + right) / 2;
    if (cdf[mid].probability >= p) {
      right = mid;
    } else {
      left = mid + 1;
    }
  }
  return cdf[left].probability >= p ? left : left + 1;
}

int64_t RealNlinks(const Cdf& cdf, int64_t rank, int64_t n) {
  if (rank < 0 || rank >= n) return 0;
  const double u = 1.0 - static_cast<double>(rank) / static_cast<double>(n);
  const size_t ix = CdfSearch(cdf, u);
  // u <= 1 and the last point is 1.0 in a well-formed file; clamp otherwise.
  return cdf[ix < cdf.size() ? ix : cdf.size() - 1].value;
}

}  // namespace farm::linkbench
