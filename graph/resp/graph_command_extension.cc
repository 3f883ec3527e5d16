#include "graph/resp/graph_command_extension.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/resp/graph_commands.h"
#include "graph/resp/graph_ops.h"
#include "graph/resp/graph_request.h"
#include "resp/resp_writer.h"

namespace farm::graph {

GraphCommandExtension::GraphCommandExtension(size_t threads)
    : threads_(threads),
      stores_(new std::atomic<GraphStore*>[threads]),
      salt_((static_cast<uint64_t>(absl::ToUnixNanos(absl::Now())) ^ reinterpret_cast<uintptr_t>(this)) *
            0xbf58476d1ce4e5b9ull) {
  for (size_t t = 0; t < threads_; ++t) stores_[t].store(nullptr, std::memory_order_relaxed);
}

void GraphCommandExtension::Open(const std::function<GraphStore*(size_t thread)>& store_of) {
  for (size_t t = 0; t < threads_; ++t) stores_[t].store(store_of(t), std::memory_order_release);
}

void GraphCommandExtension::Close() {
  for (size_t t = 0; t < threads_; ++t) stores_[t].store(nullptr, std::memory_order_release);
}

bool GraphCommandExtension::Handles(absl::string_view name) const {
  const GraphCommandSpec* spec = FindGraphCommand(name);
  return spec != nullptr && spec->uses_store;
}

void GraphCommandExtension::Run(size_t thread, uint64_t connection, absl::Span<std::string> args,
                                absl::AnyInvocable<void(std::string reply)> done) {
  const GraphCommandSpec* spec = args.empty() ? nullptr : FindGraphCommand(args[0]);
  if (spec == nullptr || !spec->uses_store) {
    return done(::farm::resp::ErrorReply(UnknownCommandMessage(args)));
  }
  if (!ArityOk(*spec, args.size())) return done(::farm::resp::ErrorReply(ArityMessage(spec->name)));
  GraphStore* store = thread < threads_ ? stores_[thread].load(std::memory_order_acquire) : nullptr;
  if (store == nullptr) return done(::farm::resp::ErrorReply("ERR the graph service is not open on this node"));
  GraphRequest request;  // takes the data arguments
  if (std::optional<std::string> error = ParseGraphRequest(*spec, args, &request)) {
    return done(::farm::resp::ErrorReply(*error));
  }
  request.load_token = (salt_ ^ (connection * 0x9e3779b97f4a7c15ull)) | 1;
  RunGraphRequest(*store, std::move(request), std::move(done));
}

}  // namespace farm::graph
