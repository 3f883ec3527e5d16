#include "graph/resp/graph_resp_server.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace farm::graph {

absl::StatusOr<std::unique_ptr<::farm::resp::RespServer>> StartGraphRespServer(
    std::vector<Context*> threads, std::function<GraphStore*(size_t thread)> store_of,
    GraphRespOptions options) {
  if (threads.empty()) return absl::InvalidArgumentError("the graph RESP server needs threads");
  if (!store_of) return absl::InvalidArgumentError("the graph RESP server needs store_of");
  std::vector<GraphStore*> stores;
  for (size_t i = 0; i < threads.size(); ++i) {
    stores.push_back(store_of(i));
    if (stores.back() == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("no graph store for thread ", i));
    }
  }
  GraphSessionOptions session;
  session.parser_limits.max_bulk_bytes = options.max_bulk_bytes;
  session.max_output_bytes = options.max_output_bytes;
  // Load tokens differ between connections and between servers (nodes, restarts).
  const uint64_t salt = static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^ reinterpret_cast<uintptr_t>(&options);
  ::farm::resp::SessionFactory factory = [stores = std::move(stores), session,
                                          salt](const ::farm::resp::SessionInfo& info) {
    GraphSessionOptions o = session;
    o.counters = info.counters;
    o.load_token = (salt ^ (info.client_id * 0x9e3779b97f4a7c15ull)) | 1;
    return GraphSession::Create(stores.at(info.thread), std::move(o));
  };
  return ::farm::resp::RespServer::Start(
      std::move(threads), std::move(factory),
      {.listen = options.listen, .max_clients = options.max_clients});
}

}  // namespace farm::graph
