// Starting a table's per-node part, the same for every layout (TableNode,
// LinearNode): creating this machine's shards with retries, opening a client on every
// worker thread, and dropping the clients on their threads. For code that runs on a
// thread that is not one of the host's worker threads (start-up and shut-down).
#ifndef FARM_KV_NODE_START_H_
#define FARM_KV_NODE_START_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/store.h"

namespace farm::kv {

using ContextOp = std::function<void(Context& ctx, Done<absl::Status> finish)>;

// Runs op(context, finish) on the host's thread t and waits for finish(Status), up to
// ShardCatalog::kOpenTimeout + 30 s (DeadlineExceeded). A continuation that runs twice
// is a bug below kv: logged, the first result stands.
absl::Status RunInContext(Host& node, size_t t, const ContextOp& op);

// `create` (the layout's CreateShards) on worker thread 0, once the node is ready;
// tried again on Unavailable, DeadlineExceeded and Aborted for up to
// ShardCatalog::kOpenTimeout. OK at once on a compute-only node (it holds no shards).
absl::Status CreateShardsOnNode(Host& node, const ContextOp& create);

// Makes a client on every worker thread with `open` (on that thread). On an error the
// clients made so far are dropped on their threads and `clients` is left empty.
template <typename Client>
absl::Status OpenClientsOnNode(
    Host& node,
    const std::function<void(Context& ctx, Done<absl::StatusOr<std::unique_ptr<Client>>> done)>& open,
    std::vector<std::unique_ptr<Client>>& clients) {
  std::vector<std::unique_ptr<Client>> made(node.thread_count());
  for (size_t t = 0; t < made.size(); ++t) {
    std::unique_ptr<Client>* client = &made[t];
    absl::Status opened = RunInContext(node, t, [&open, client](Context& ctx, Done<absl::Status> finish) {
      open(ctx, [client, finish = std::move(finish)](absl::StatusOr<std::unique_ptr<Client>> c) mutable {
        if (!c.ok()) return finish(c.status());
        *client = std::move(*c);
        finish(absl::OkStatus());
      });
    });
    if (!opened.ok()) {
      for (size_t u = 0; u < t; ++u) RunOnThread(node, u, [c = &made[u]](Context&) { c->reset(); });
      return opened;
    }
  }
  clients = std::move(made);
  return absl::OkStatus();
}

// Drops each client on its own thread.
template <typename Client>
void DropClientsOnNode(Host& node, std::vector<std::unique_ptr<Client>>& clients) {
  for (size_t t = 0; t < clients.size(); ++t) {
    RunOnThread(node, t, [client = &clients[t]](Context&) { client->reset(); });
  }
  clients.clear();
}

}  // namespace farm::kv

#endif  // FARM_KV_NODE_START_H_
