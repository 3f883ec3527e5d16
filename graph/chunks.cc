#include "graph/chunks.h"

#include <algorithm>
#include <utility>

#include "absl/strings/string_view.h"
#include "graph/layout.h"

namespace farm::graph {

Task<absl::StatusOr<std::vector<FatPtr>>> WriteNodeChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index,
                                                          ClientStats* stats, const std::string& data, Addr hint) {
  std::vector<FatPtr> chunks;
  if (data.size() <= kMaxInlineNodeData) co_return chunks;
  for (size_t at = 0; at < data.size(); at += kChunkDataBytes) {
    const std::string chunk = EncodeChunk(absl::string_view(data).substr(at, kChunkDataBytes));
    absl::StatusOr<FatPtr> ptr = co_await RunTx<FatPtr>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<FatPtr>> {
      absl::StatusOr<ObjBuf*> object = co_await TxAlloc(s.tx, static_cast<uint32_t>(chunk.size()), hint);
      if (!object.ok()) co_return object.status();
      std::copy(chunk.begin(), chunk.end(), (*object)->data().begin());
      if (absl::Status st = txWrite(s.tx, *object); !st.ok()) co_return st;
      co_return (*object)->ptr();
    });
    if (!ptr.ok()) co_return ptr.status();
    chunks.push_back(*ptr);
  }
  co_return chunks;
}

Task<absl::Status> FreeNodeChunks(Context& ctx, std::shared_ptr<const kv::ShardMap> index, ClientStats* stats,
                                  std::vector<FatPtr> chunks) {
  if (chunks.empty()) co_return absl::OkStatus();
  absl::StatusOr<bool> freed = co_await RunTx<bool>(ctx, index, stats, [&](TxScope& s) -> Task<absl::StatusOr<bool>> {
    for (const FatPtr& c : chunks) {
      if (absl::Status st = txFree(s.tx, c); !st.ok()) co_return st;
    }
    co_return true;
  });
  co_return freed.status();
}

}  // namespace farm::graph
