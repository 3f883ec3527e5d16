#include "tools/ycsb/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace farm::ycsb {
namespace {

double Us(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

std::string JsonNumber(double v) {
  if (!std::isfinite(v)) return "null";
  return absl::StrFormat("%.10g", v);
}

std::string LatencyJson(const LatencySummary& l) {
  return absl::StrCat(
      "{\"count\": ", l.count, ", \"mean_us\": ", JsonNumber(l.mean_us),
      ", \"p50_us\": ", JsonNumber(l.p50_us), ", \"p90_us\": ", JsonNumber(l.p90_us),
      ", \"p99_us\": ", JsonNumber(l.p99_us), ", \"p999_us\": ", JsonNumber(l.p999_us),
      ", \"max_us\": ", JsonNumber(l.max_us), "}");
}

std::string LatencyRow(absl::string_view name, uint64_t ops, uint64_t errors, uint64_t not_found,
                       const LatencySummary& l) {
  return absl::StrFormat("  %-18s %11d %7d %9d %9.1f %8.1f %8.1f %8.1f %8.1f %9.1f\n", name, ops,
                         errors, not_found, l.mean_us, l.p50_us, l.p90_us, l.p99_us, l.p999_us,
                         l.max_us);
}

// Whole numbers in full ("100000"), others to four significant digits.
std::string FigureText(double v) {
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.4g", v);
}

}  // namespace

LatencySummary Summarize(const LatencyHistogram& h) {
  LatencySummary s;
  s.count = h.count();
  s.mean_us = h.MeanNs() / 1000.0;
  s.p50_us = Us(h.PercentileNs(50));
  s.p90_us = Us(h.PercentileNs(90));
  s.p99_us = Us(h.PercentileNs(99));
  s.p999_us = Us(h.PercentileNs(99.9));
  s.max_us = Us(h.MaxNs());
  return s;
}

void RunReport::SetOpStats(const OpStats& stats) {
  LatencyHistogram all;
  per_op.clear();
  for (OpType t : kAllOpTypes) {
    const OpTypeStats& s = stats.of(t);
    all.Merge(s.latency);
    if (s.latency.count() == 0 && s.errors == 0) continue;
    per_op.push_back({t, s.latency.count(), s.errors, s.not_found, Summarize(s.latency)});
  }
  ops = stats.completed();
  errors = stats.errors();
  latency = Summarize(all);
  first_error = stats.first_error();
  throughput = seconds > 0 ? static_cast<double>(ops) / seconds : 0;
}

std::string FormatReport(const RunReport& r) {
  std::string out = absl::StrFormat(
      "%s: workload %s (%s), %d threads, %d records, keys <= %d B, values %d B\n", r.backend,
      r.workload, r.distribution, r.threads, r.records, r.key_bytes, r.value_bytes);
  absl::StrAppendFormat(&out, "  load: %d inserts in %.2f s, %.0f ops/s\n", r.records,
                        r.load_seconds, r.load_throughput);
  absl::StrAppendFormat(&out, "  run:  %d ops in %.2f s, %.0f ops/s, %d errors\n", r.ops, r.seconds,
                        r.throughput, r.errors);
  absl::StrAppendFormat(&out, "  %-18s %11s %7s %9s %9s %8s %8s %8s %8s %9s\n", "op (us)", "ops",
                        "errors", "not_found", "mean", "p50", "p90", "p99", "p99.9", "max");
  uint64_t not_found = 0;
  for (const OpTypeReport& o : r.per_op) {
    absl::StrAppend(&out, LatencyRow(OpTypeName(o.type), o.ops, o.errors, o.not_found, o.latency));
    not_found += o.not_found;
  }
  if (r.per_op.size() > 1)
    absl::StrAppend(&out, LatencyRow("ALL", r.ops, r.errors, not_found, r.latency));
  if (!r.first_error.empty()) absl::StrAppend(&out, "  first error: ", r.first_error, "\n");
  if (!r.figures.empty()) {
    absl::StrAppend(&out, "  figures:");
    for (const Figure& f : r.figures) absl::StrAppend(&out, " ", f.name, "=", FigureText(f.value));
    absl::StrAppend(&out, "\n");
  }
  return out;
}

namespace {

// The width of a table's backend column: the longest name, at least 12.
int BackendColumn(absl::Span<const RunReport> runs) {
  size_t width = 12;
  for (const RunReport& r : runs) width = std::max(width, r.backend.size());
  return static_cast<int>(width);
}

}  // namespace

std::string FormatComparison(absl::Span<const RunReport> runs) {
  if (runs.empty()) return "";
  const RunReport& base = runs.front();
  const int column = BackendColumn(runs);
  std::string out = absl::StrFormat("%-*s %12s %10s %8s", column, "backend", "ops/s",
                                    absl::StrCat("vs ", base.backend), "errors");
  for (const OpTypeReport& o : base.per_op) {
    absl::StrAppendFormat(&out, "  %19s", absl::StrCat(OpTypeName(o.type), " p50/p99 us"));
  }
  absl::StrAppend(&out, "\n");
  for (const RunReport& r : runs) {
    absl::StrAppendFormat(&out, "%-*s %12.0f %9.2fx %8d", column, r.backend, r.throughput,
                          base.throughput > 0 ? r.throughput / base.throughput : 0.0, r.errors);
    for (const OpTypeReport& b : base.per_op) {
      const OpTypeReport* mine = nullptr;
      for (const OpTypeReport& o : r.per_op) {
        if (o.type == b.type) mine = &o;
      }
      if (mine == nullptr) {
        absl::StrAppendFormat(&out, "  %19s", "-");
      } else {
        absl::StrAppendFormat(
            &out, "  %19s",
            absl::StrFormat("%.1f / %.1f", mine->latency.p50_us, mine->latency.p99_us));
      }
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

namespace {

const OpTypeReport* FindOp(const RunReport& r, OpType type) {
  for (const OpTypeReport& o : r.per_op) {
    if (o.type == type) return &o;
  }
  return nullptr;
}

}  // namespace

std::string FormatAcrossWorkloads(absl::Span<const RunReport> runs) {
  if (runs.empty()) return "";
  const std::string& first_workload = runs.front().workload;
  const int column = BackendColumn(runs);
  std::string out = absl::StrFormat("%-*s %-10s %12s %19s %16s\n", column, "backend", "workload", "ops/s",
                                    "READ p50/p99 us", absl::StrCat("p99 vs ", first_workload));
  for (const RunReport& r : runs) {
    const OpTypeReport* read = FindOp(r, OpType::kRead);
    const OpTypeReport* base = nullptr;
    for (const RunReport& b : runs) {
      if (b.workload == first_workload && b.backend == r.backend) base = FindOp(b, OpType::kRead);
    }
    const std::string latency =
        read == nullptr ? "-" : absl::StrFormat("%.1f / %.1f", read->latency.p50_us, read->latency.p99_us);
    const std::string ratio = read == nullptr || base == nullptr || base->latency.p99_us <= 0
                                  ? "-"
                                  : absl::StrFormat("%.2fx", read->latency.p99_us / base->latency.p99_us);
    absl::StrAppendFormat(&out, "%-*s %-10s %12.0f %19s %16s\n", column, r.backend, r.workload, r.throughput, latency,
                          ratio);
  }
  return out;
}

std::string ReportsToJson(absl::Span<const RunReport> runs) {
  std::vector<std::string> items;
  for (const RunReport& r : runs) {
    std::string s = absl::StrCat(
        "    {\"backend\": ", JsonString(r.backend), ", \"workload\": ", JsonString(r.workload),
        ", \"distribution\": ", JsonString(r.distribution), ", \"threads\": ", r.threads,
        ", \"records\": ", r.records, ", \"key_bytes\": ", r.key_bytes,
        ", \"value_bytes\": ", r.value_bytes,
        ",\n     \"load_seconds\": ", JsonNumber(r.load_seconds),
        ", \"load_throughput\": ", JsonNumber(r.load_throughput), ", \"ops\": ", r.ops,
        ", \"errors\": ", r.errors, ", \"seconds\": ", JsonNumber(r.seconds),
        ", \"throughput\": ", JsonNumber(r.throughput),
        ",\n     \"latency\": ", LatencyJson(r.latency), ",\n     \"per_op\": {");
    std::vector<std::string> ops;
    for (const OpTypeReport& o : r.per_op) {
      ops.push_back(absl::StrCat("\n       ", JsonString(OpTypeName(o.type)), ": {\"ops\": ", o.ops,
                                 ", \"errors\": ", o.errors, ", \"not_found\": ", o.not_found,
                                 ", \"latency\": ", LatencyJson(o.latency), "}"));
    }
    absl::StrAppend(&s, absl::StrJoin(ops, ","), "},\n     \"figures\": {");
    std::vector<std::string> figures;
    for (const Figure& f : r.figures) {
      figures.push_back(absl::StrCat(JsonString(f.name), ": ", JsonNumber(f.value)));
    }
    absl::StrAppend(&s, absl::StrJoin(figures, ", "),
                    "}, \"first_error\": ", JsonString(r.first_error), "}");
    items.push_back(std::move(s));
  }
  return absl::StrCat("{\"runs\": [\n", absl::StrJoin(items, ",\n"), "\n]}\n");
}

absl::Status WriteJsonFile(const std::string& path, absl::Span<const RunReport> runs) {
  const std::string json = ReportsToJson(runs);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("open ", path));
  const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
  return absl::OkStatus();
}

}  // namespace farm::ycsb
