// GraphStore's default LoadLinkLists: one LoadLinks after the other.
#include "graph/store.h"

#include <memory>
#include <utility>

namespace farm::graph {
namespace {

// The lists left to load and the links added so far; each LoadLinks' continuation
// starts the next (on the store's thread, never inline: store.h).
struct ListsInOrder {
  GraphStore* store;
  std::vector<LinkList> lists;
  uint64_t load;
  Done<absl::StatusOr<uint64_t>> done;
  size_t next = 0;
  uint64_t added = 0;
};

void LoadNext(std::shared_ptr<ListsInOrder> state) {
  if (state->next == state->lists.size()) return state->done(state->added);
  LinkList& list = state->lists[state->next++];
  GraphStore* store = state->store;
  store->LoadLinks(list.id1, list.type, std::move(list.links), state->load,
                   [state = std::move(state)](absl::StatusOr<uint64_t> added) mutable {
                     if (!added.ok()) return state->done(added.status());
                     state->added += *added;
                     LoadNext(std::move(state));
                   });
}

}  // namespace

void GraphStore::LoadLinkLists(std::vector<LinkList> lists, uint64_t load, Done<absl::StatusOr<uint64_t>> done) {
  if (lists.empty()) {
    // Through LoadLinks of nothing, so that `done` runs later, as the contract says.
    return LoadLinks(0, kDefaultLinkType, {}, load, [done = std::move(done)](absl::StatusOr<uint64_t> r) mutable {
      if (!r.ok()) return done(r.status());
      done(uint64_t{0});
    });
  }
  LoadNext(std::make_shared<ListsInOrder>(ListsInOrder{this, std::move(lists), load, std::move(done)}));
}

}  // namespace farm::graph
