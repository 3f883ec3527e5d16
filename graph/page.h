// PageBuilder: one page of getLinkList (LinkRange) built from a list's blocks in list
// order — visible links with min_time <= time <= max_time, newest first, `offset`
// skipped, at most `limit` — whether the blocks come from lock-free READs
// (graph_reader.h) or a transaction (graph_tx.h).
#ifndef FARM_GRAPH_PAGE_H_
#define FARM_GRAPH_PAGE_H_

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/layout.h"
#include "graph/types.h"

namespace farm::graph {

class PageBuilder {
 public:
  explicit PageBuilder(const LinkRange& range) : range_(range), skip_(range.offset) {}

  // Adds one block's edges (its bytes); *next is the following block. Internal for a
  // malformed block.
  absl::Status Add(std::span<const char> block, FatPtr* next) {
    return ForEachEdge(block, next, [&](const EdgeView& e) {
      if (e.time < range_.min_time || page_.size() >= range_.limit) {
        complete_ = true;  // older edges follow: none can match
        return false;
      }
      if (e.visibility != Visibility::kVisible || e.time > range_.max_time) return true;
      if (skip_ > 0) {
        --skip_;
        return true;
      }
      page_.push_back(Link{range_.id1, range_.type, e.id2, e.visibility, e.version, e.time, std::string(e.data)});
      if (page_.size() >= range_.limit) complete_ = true;
      return true;
    });
  }
  // No later block can add to the page.
  bool complete() const { return complete_; }
  std::vector<Link> Take() { return std::move(page_); }

 private:
  const LinkRange range_;
  uint32_t skip_;
  bool complete_ = false;
  std::vector<Link> page_;
};

}  // namespace farm::graph

#endif  // FARM_GRAPH_PAGE_H_
