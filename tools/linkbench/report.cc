#include "tools/linkbench/report.h"

#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace farm::linkbench {
namespace {

double Ms(uint64_t ns) { return ns / 1e6; }

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

double LinksPerSecond(const LoadResult& l) { return l.seconds > 0 ? l.links / l.seconds : 0; }
// Nodes load on their own thread, beside the links: their rate is over that thread's time.
double NodesPerSecond(const LoadResult& l) {
  const double s = l.node_seconds > 0 ? l.node_seconds : l.seconds;
  return s > 0 ? l.nodes / s : 0;
}

}  // namespace

std::string LoadSummary(const RunRecord& run) {
  const LoadResult& l = run.load;
  std::string s = absl::StrFormat(
      "LOAD PHASE COMPLETED [%s]. Loaded %d nodes. Loaded %d links (%.2f links per node). Took %.1f seconds. "
      "Links/second = %.0f. Nodes/second = %.0f\n",
      run.backend, l.nodes, l.links, l.nodes ? static_cast<double>(l.links) / l.nodes : 0.0, l.seconds,
      LinksPerSecond(l), NodesPerSecond(l));
  if (l.id_mismatches > 0) absl::StrAppend(&s, "  warning: ", l.id_mismatches, " nodes got unexpected ids\n");
  return s;
}

std::string RequestSummary(const RunRecord& run) {
  const RequestResult& r = run.requests;
  std::string s;
  for (size_t i = 0; i < kOpTypeCount; ++i) {
    const ycsb::LatencyHistogram& h = r.stats->latency[i];
    if (h.count() == 0 && r.stats->errors[i] == 0) continue;
    absl::StrAppendFormat(&s,
                          "%-14s count = %8d  p25 = %.3fms  p50 = %.3fms  p75 = %.3fms  p95 = %.3fms  "
                          "p99 = %.3fms  max = %.3fms  mean = %.3fms",
                          kOpNames[i], h.count(), Ms(h.PercentileNs(25)), Ms(h.PercentileNs(50)),
                          Ms(h.PercentileNs(75)), Ms(h.PercentileNs(95)), Ms(h.PercentileNs(99)), Ms(h.MaxNs()),
                          h.MeanNs() / 1e6);
    if (r.stats->errors[i] > 0) absl::StrAppend(&s, "  errors = ", r.stats->errors[i]);
    s += "\n";
  }
  absl::StrAppendFormat(&s, "REQUEST PHASE COMPLETED [%s]. %d requests done in %.1f seconds. Requests/second = %.0f\n",
                        run.backend, r.requests, r.seconds, r.OpsPerSecond());
  absl::StrAppendFormat(&s, "  multiget found = %d, not found = %d; history queries = %d; list rows = %d\n",
                        r.stats->multiget_found, r.stats->multiget_not_found, r.stats->history_queries,
                        r.stats->range_rows);
  if (r.errors > 0) {
    absl::StrAppendFormat(&s, "  %d failed requests, %d requesters stopped; first: %s\n", r.errors,
                          r.aborted_requesters, r.first_error);
  }
  return s;
}

std::string Comparison(const std::vector<RunRecord>& runs) {
  if (runs.size() < 2) return "";
  const RunRecord& base = runs.back();
  std::string s = absl::StrFormat("\nCOMPARISON (ratios against %s)\n", base.backend);
  absl::StrAppendFormat(&s, "%-12s %12s %8s %12s %8s %12s %8s  %s\n", "backend", "requests/s", "ratio", "links/s",
                        "ratio", "nodes/s", "ratio", "p50/p99 GET_LINKS_LIST");
  for (const RunRecord& run : runs) {
    auto ratio = [](double a, double b) { return b > 0 ? a / b : 0.0; };
    const ycsb::LatencyHistogram& list = run.requests.stats->latency[static_cast<size_t>(OpType::kGetLinksList)];
    absl::StrAppendFormat(&s, "%-12s %12.0f %7.2fx %12.0f %7.2fx %12.0f %7.2fx  %.3f/%.3f ms\n", run.backend,
                          run.requests.OpsPerSecond(), ratio(run.requests.OpsPerSecond(), base.requests.OpsPerSecond()),
                          LinksPerSecond(run.load), ratio(LinksPerSecond(run.load), LinksPerSecond(base.load)),
                          NodesPerSecond(run.load), ratio(NodesPerSecond(run.load), NodesPerSecond(base.load)),
                          Ms(list.PercentileNs(50)), Ms(list.PercentileNs(99)));
  }
  return s;
}

std::string ToJson(const RunSettings& st, const std::vector<RunRecord>& runs) {
  std::string s = "{\n";
  absl::StrAppendFormat(&s,
                        "  \"settings\": {\"workload_file\": %s, \"mix\": %s, \"startid1\": %d, \"maxid1\": %d, "
                        "\"loaders\": %d, \"requesters\": %d, \"requests_per_requester\": %d, "
                        "\"warmup_requests_per_requester\": %d, \"max_time_s\": %g, \"expected_links\": %d},\n",
                        JsonString(st.workload_file), JsonString(st.mix), st.startid1, st.maxid1, st.loaders,
                        st.requesters, st.requests_per_requester, st.warmup_requests_per_requester, st.max_time_s,
                        st.expected_links);
  s += "  \"runs\": [\n";
  for (size_t k = 0; k < runs.size(); ++k) {
    const RunRecord& run = runs[k];
    const LoadResult& l = run.load;
    const RequestResult& r = run.requests;
    absl::StrAppendFormat(&s, "    {\"backend\": %s, \"description\": %s,\n", JsonString(run.backend),
                          JsonString(run.description));
    s += "     \"summary\": [";
    for (size_t i = 0; i < run.summary.size(); ++i) absl::StrAppend(&s, i ? ", " : "", JsonString(run.summary[i]));
    s += "],\n";
    absl::StrAppendFormat(&s,
                          "     \"load\": {\"nodes\": %d, \"links\": %d, \"seconds\": %.3f, \"links_per_s\": %.1f, "
                          "\"nodes_per_s\": %.1f, \"node_seconds\": %.3f},\n",
                          l.nodes, l.links, l.seconds, LinksPerSecond(l), NodesPerSecond(l), l.node_seconds);
    absl::StrAppendFormat(&s,
                          "     \"requests\": {\"requests\": %d, \"errors\": %d, \"aborted_requesters\": %d, "
                          "\"first_error\": %s, \"seconds\": %.3f, \"ops_per_s\": %.1f, \"multiget_found\": %d, "
                          "\"multiget_not_found\": %d, \"history_queries\": %d, \"list_rows\": %d,\n",
                          r.requests, r.errors, r.aborted_requesters, JsonString(r.first_error), r.seconds,
                          r.OpsPerSecond(), r.stats->multiget_found, r.stats->multiget_not_found,
                          r.stats->history_queries, r.stats->range_rows);
    s += "      \"ops\": {";
    bool first = true;
    for (size_t i = 0; i < kOpTypeCount; ++i) {
      const ycsb::LatencyHistogram& h = r.stats->latency[i];
      absl::StrAppendFormat(&s,
                            "%s\n        %s: {\"count\": %d, \"errors\": %d, \"p25_ms\": %.4f, \"p50_ms\": %.4f, "
                            "\"p75_ms\": %.4f, \"p95_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, \"mean_ms\": %.4f}",
                            first ? "" : ",", JsonString(kOpNames[i]), h.count(), r.stats->errors[i],
                            Ms(h.PercentileNs(25)), Ms(h.PercentileNs(50)), Ms(h.PercentileNs(75)),
                            Ms(h.PercentileNs(95)), Ms(h.PercentileNs(99)), Ms(h.MaxNs()), h.MeanNs() / 1e6);
      first = false;
    }
    absl::StrAppend(&s, "}}}", k + 1 < runs.size() ? "," : "", "\n");
  }
  s += "  ]\n}\n";
  return s;
}

absl::Status WriteFile(const std::string& path, const std::string& contents) {
  std::ofstream out(path);
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  out << contents;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("writing ", path, " failed"));
  return absl::OkStatus();
}

}  // namespace farm::linkbench
