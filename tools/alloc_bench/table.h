// The benchmark's only output format: a table printed with padded columns
// (Markdown-compatible), followed by a blank line.
#ifndef FARM_TOOLS_ALLOC_BENCH_TABLE_H_
#define FARM_TOOLS_ALLOC_BENCH_TABLE_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace farm::alloc_bench {

// The first `text_columns` columns are left-aligned, the others right-aligned. Every row
// has as many cells as the header.
class Table {
 public:
  Table(std::vector<std::string> header, size_t text_columns)
      : header_(std::move(header)), text_columns_(text_columns) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  // Writes the table to stdout.
  void Print() const;

 private:
  void PrintRow(const std::vector<std::string>& row, const std::vector<size_t>& widths) const;

  std::vector<std::string> header_;
  size_t text_columns_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace farm::alloc_bench

#endif  // FARM_TOOLS_ALLOC_BENCH_TABLE_H_
