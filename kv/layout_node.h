// LayoutNode<LayoutHost, Client>: a layout's KvTable (kv/kv_table.h) on one node
// process, the same for every layout: its LayoutHost (the table's handlers and this
// machine's part of the table) and a Client for every worker thread. A layout's node
// (TableNode, LinearNode, ChainedNode, CuckooNode) derives from it and adds its
// Install, which installs the host before the node starts.
//
//   CreateShards   LayoutHost::CreateShards(ctx, done) on worker thread 0, with retries
//                  (kv/node_start.h: CreateShardsOnNode).
//   Open           a Client on every worker thread, made there by the layout's
//                  OpenClient; OpenShippingClient is the one of the layouts whose host
//                  is a CatalogHost and whose Client is Client(ctx, table, update_msg).
//
// Threads: as KvTable's. The host outlives the clients (they are dropped first, each
// on its thread).
#ifndef FARM_KV_LAYOUT_NODE_H_
#define FARM_KV_LAYOUT_NODE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "farm/api/farm.h"
#include "farm/api/host.h"
#include "kv/kv_table.h"
#include "kv/node_start.h"
#include "kv/store.h"

namespace farm::kv {

template <typename LayoutHost, typename Client>
class LayoutNode : public KvTable {
 public:
  // Makes this thread's client from the opened table (opening it first if needed).
  using OpenClient = std::function<void(LayoutHost& host, Context& ctx,
                                        Done<absl::StatusOr<std::unique_ptr<Client>>> done)>;

  ~LayoutNode() override { DropClientsOnNode(node_, clients_); }
  LayoutNode(const LayoutNode&) = delete;
  LayoutNode& operator=(const LayoutNode&) = delete;

  const std::string& layout() const override { return layout_; }
  absl::Status CreateShards() override {
    LayoutHost* host = host_.get();
    return CreateShardsOnNode(node_, [host](Context& ctx, Done<absl::Status> finish) {
      host->CreateShards(ctx, std::move(finish));
    });
  }
  absl::Status Open() override {
    if (open()) return absl::FailedPreconditionError("the table is open already");
    return OpenClientsOnNode<Client>(
        node_,
        [this](Context& ctx, Done<absl::StatusOr<std::unique_ptr<Client>>> done) {
          open_client_(*host_, ctx, std::move(done));
        },
        clients_);
  }
  bool open() const override { return !clients_.empty(); }
  // After Open; on worker thread t only.
  Client& client(size_t t) override { return *clients_.at(t); }

  LayoutHost& host() { return *host_; }

 protected:
  // `layout` is the name the table was made by (kv/table_layouts.h).
  LayoutNode(Host& node, std::unique_ptr<LayoutHost> host, std::string layout,
             OpenClient open_client)
      : layout_(std::move(layout)),
        node_(node),
        host_(std::move(host)),
        open_client_(std::move(open_client)) {}

 private:
  const std::string layout_;
  Host& node_;
  std::unique_ptr<LayoutHost> host_;
  const OpenClient open_client_;
  std::vector<std::unique_ptr<Client>> clients_;
};

// OpenClient for a CatalogHost layout (kv/catalog_host.h) whose Client is made as
// Client(ctx, opened table, the table's update message).
template <typename LayoutHost, typename Client>
void OpenShippingClient(LayoutHost& host, Context& ctx,
                        Done<absl::StatusOr<std::unique_ptr<Client>>> done) {
  const MsgId update_msg = host.options().identity.update_msg;
  host.Open(ctx, [&ctx, update_msg, done = std::move(done)](auto table) mutable {
    if (!table.ok()) return done(table.status());
    done(std::make_unique<Client>(ctx, *table, update_msg));
  });
}

}  // namespace farm::kv

#endif  // FARM_KV_LAYOUT_NODE_H_
