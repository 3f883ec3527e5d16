#include "tools/linkbench/requester.h"

#include <chrono>
#include <limits>

#include "absl/strings/str_cat.h"

namespace farm::linkbench {
namespace {

constexpr size_t kTailHistoryLimit = 2048;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

uint64_t ElapsedNs(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

Requester::Requester(const WorkloadModel& model, int requester_id, int nrequesters, int64_t seed)
    : model_(model),
      w_(model.workload()),
      requester_id_(requester_id),
      nrequesters_(nrequesters),
      cumulative_(Cumulative(w_.mix)),
      rng_(seed),
      link_add_gen_(w_.link_add),
      link_up_gen_(w_.link_up),
      node_add_gen_(w_.node_add),
      node_up_gen_(w_.node_up) {}

OpType Requester::ChooseOp(double r) const {
  const size_t i = farm::linkbench::ChooseOp(cumulative_, r);
  return static_cast<OpType>(i < kOpTypeCount ? i : kOpTypeCount - 1);
}

absl::Status Requester::RunOne(Connection& conn, OpStats& stats) {
  const double r = rng_.NextDouble() * 100.0;
  const OpType op = ChooseOp(r);
  const LinkCounts& counts = model_.counts();
  uint64_t ns = 0;
  absl::Status status;
  switch (op) {
    case OpType::kAddLink:
    case OpType::kUpdateLink: {
      const bool add = op == OpType::kAddLink;
      graph::Link link;
      link.id1 = model_.LinkWriteId(rng_);
      link.type = counts.ChooseLinkType(rng_);
      link.id2 = counts.ChooseForOp(rng_, link.id1, link.type, add ? kPAddExist : kPUpdateExist, requester_id_,
                                    nrequesters_);
      link.visibility = graph::Visibility::kVisible;
      link.version = 0;
      link.time = NowMs();
      const size_t size = model_.LinkDataSize(rng_);
      link.data = (add ? link_add_gen_ : link_up_gen_).Fill(rng_, size);
      const auto start = std::chrono::steady_clock::now();
      status = conn.AddLink(std::move(link)).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kDeleteLink: {
      const int64_t id1 = model_.LinkWriteId(rng_);
      const int64_t type = counts.ChooseLinkType(rng_);
      const int64_t id2 = counts.ChooseForOp(rng_, id1, type, kPDeleteExist, requester_id_, nrequesters_);
      const auto start = std::chrono::steady_clock::now();
      status = conn.DeleteLink(id1, type, id2, /*expunge=*/false).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kCountLink: {
      const int64_t id1 = model_.LinkReadId(rng_);
      const int64_t type = counts.ChooseLinkType(rng_);
      const auto start = std::chrono::steady_clock::now();
      status = conn.CountLinks(id1, type).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kMultigetLink: {
      const int64_t id1 = model_.LinkReadId(rng_);
      const int64_t type = counts.ChooseLinkType(rng_);
      const int n = model_.MultigetSize(rng_);
      const std::vector<int64_t> id2s =
          counts.ChooseMultipleForOp(rng_, id1, type, n, kPGetExist, requester_id_, nrequesters_);
      const auto start = std::chrono::steady_clock::now();
      absl::StatusOr<std::vector<graph::Link>> links = conn.GetLinks(id1, type, id2s);
      ns = ElapsedNs(start);
      status = links.status();
      if (links.ok()) {
        // (as LinkBench) found links count when any were found, else the missing ones
        if (!links->empty()) {
          stats.multiget_found += links->size();
        } else {
          stats.multiget_not_found += n;
        }
      }
      break;
    }
    case OpType::kGetLinksList:
      status = GetLinkList(conn, stats, ns);
      break;
    case OpType::kAddNode: {
      graph::Node node;
      node.type = graph::kDefaultNodeType;
      node.version = 1;
      node.time = static_cast<int32_t>(NowMs() / 1000);
      const size_t size = model_.NodeDataSize(rng_);
      node.data = node_add_gen_.Fill(rng_, size);
      const auto start = std::chrono::steady_clock::now();
      status = conn.AddNode(std::move(node)).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kUpdateNode: {
      graph::Node node;
      node.id = model_.NodeUpdateId(rng_);
      node.type = graph::kDefaultNodeType;
      node.version = 2;
      node.time = static_cast<int32_t>(NowMs() / 1000);
      const size_t size = model_.NodeDataSize(rng_);
      node.data = node_up_gen_.Fill(rng_, size);
      const auto start = std::chrono::steady_clock::now();
      status = conn.UpdateNode(std::move(node)).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kDeleteNode: {
      const int64_t id = model_.NodeDeleteId(rng_);
      const auto start = std::chrono::steady_clock::now();
      status = conn.DeleteNode(id, graph::kDefaultNodeType).status();
      ns = ElapsedNs(start);
      break;
    }
    case OpType::kGetNode: {
      const int64_t id = model_.NodeReadId(rng_);
      const auto start = std::chrono::steady_clock::now();
      status = conn.GetNode(id, graph::kDefaultNodeType).status();
      ns = ElapsedNs(start);
      break;
    }
  }
  if (!status.ok()) {
    ++stats.errors[static_cast<size_t>(op)];
    return absl::Status(status.code(), absl::StrCat(OpName(op), ": ", status.message()));
  }
  stats.Record(op, ns);
  return absl::OkStatus();
}

absl::Status Requester::GetLinkList(Connection& conn, OpStats& stats, uint64_t& ns) {
  absl::StatusOr<std::vector<graph::Link>> links;
  if (rng_.NextDouble() < w_.getlinklist_history && !tail_history_.empty()) {
    // Older history of a list that filled a page before.
    const size_t choice = static_cast<size_t>(rng_.NextInt(static_cast<int32_t>(tail_history_.size())));
    const graph::Link prev = tail_history_[choice];
    graph::LinkRange range{prev.id1, prev.type, 0, prev.time, 1, graph::kDefaultRangeLimit};
    const auto start = std::chrono::steady_clock::now();
    links = conn.GetLinkList(range);
    ns = ElapsedNs(start);
    if (!links.ok()) return links.status();
    if (links->size() == graph::kDefaultRangeLimit) {
      tail_history_[choice] = links->back();  // there may be more still
    } else {
      RemoveTailEntry(choice);
    }
    ++stats.history_queries;
  } else {
    graph::LinkRange range;
    range.id1 = model_.LinkReadId(rng_);
    range.type = model_.counts().ChooseLinkType(rng_);
    range.limit = w_.list_limit;
    if (w_.time_range_fraction > 0 && rng_.NextDouble() < w_.time_range_fraction) {
      // TAO's assoc_time_range: a window ending somewhere in the load's time span.
      range.max_time = NowMs() - rng_.NextInt(std::numeric_limits<int32_t>::max());
      range.min_time = range.max_time - w_.time_range_ms;
    }
    const auto start = std::chrono::steady_clock::now();
    links = conn.GetLinkList(range);
    ns = ElapsedNs(start);
    if (!links.ok()) return links.status();
    if (links->size() >= graph::kDefaultRangeLimit) AddTailEntry(links->back());
  }
  stats.range_rows += links->size();
  return absl::OkStatus();
}

void Requester::AddTailEntry(const graph::Link& last) {
  const std::pair<int64_t, int64_t> key{last.id1, last.type};
  if (tail_index_.contains(key)) return;
  if (tail_history_.size() < kTailHistoryLimit) {
    tail_history_.push_back(last);
    tail_index_[key] = tail_history_.size() - 1;
    return;
  }
  // Evict a random entry in favour of this one.
  const size_t choice = static_cast<size_t>(rng_.NextInt(static_cast<int32_t>(tail_history_.size())));
  tail_index_.erase({tail_history_[choice].id1, tail_history_[choice].type});
  tail_history_[choice] = last;
  tail_index_[key] = choice;
}

void Requester::RemoveTailEntry(size_t pos) {
  tail_index_.erase({tail_history_[pos].id1, tail_history_[pos].type});
  if (pos != tail_history_.size() - 1) {
    tail_history_[pos] = tail_history_.back();
    tail_index_[{tail_history_[pos].id1, tail_history_[pos].type}] = pos;
  }
  tail_history_.pop_back();
}

}  // namespace farm::linkbench
