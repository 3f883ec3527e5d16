#include "tools/alloc_bench/table.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm::alloc_bench {

void Table::Print() const {
  std::vector<size_t> widths(header_.size(), 3);
  for (size_t c = 0; c < header_.size(); ++c) {
    widths[c] = std::max(widths[c], header_[c].size());
    for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
  }
  PrintRow(header_, widths);
  std::string rule = "|";
  for (size_t c = 0; c < widths.size(); ++c) {
    rule += c < text_columns_ ? absl::StrCat(":", std::string(widths[c] + 1, '-'), "|")
                              : absl::StrCat(std::string(widths[c] + 1, '-'), ":|");
  }
  std::printf("%s\n", rule.c_str());
  for (const auto& row : rows_) PrintRow(row, widths);
  std::printf("\n");
}

void Table::PrintRow(const std::vector<std::string>& row,
                     const std::vector<size_t>& widths) const {
  std::string line = "|";
  for (size_t c = 0; c < row.size(); ++c) {
    const int w = static_cast<int>(widths[c]);
    line += c < text_columns_ ? absl::StrFormat(" %-*s |", w, row[c])
                              : absl::StrFormat(" %*s |", w, row[c]);
  }
  std::printf("%s\n", line.c_str());
}

}  // namespace farm::alloc_bench
