// SessionOps: a session's KeyOps outside transactions. Reads go through the session's
// ReadBatch (gathered while the session starts the commands it parsed together, issued
// as one multi-get); writes go to the Store (the commands whose writes are combined
// reach the thread's WriteCombiner through DataEnv::combiner instead).
//
// Threads and lifetime: KeyOps's (key_ops.h). Callbacks of commands hold it, so it may
// outlive its session: it owns the ReadBatch.
#ifndef FARM_KV_RESP_SESSION_OPS_H_
#define FARM_KV_RESP_SESSION_OPS_H_

#include <memory>

#include "kv/resp/key_ops.h"
#include "kv/resp/read_batch.h"
#include "kv/store.h"

namespace farm::kv::resp {

class SessionOps final : public KeyOps {
 public:
  explicit SessionOps(Store* store) : store_(store), batch_(store) {}

  ReadBatch& batch() { return batch_; }
  const ReadBatch& batch() const { return batch_; }

  void Get(absl::string_view key, Done<absl::StatusOr<Value>> done) override {
    batch_.Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys,
                Done<absl::StatusOr<std::vector<Value>>> done) override {
    batch_.MultiGet(keys, std::move(done));
  }
  void Put(absl::string_view key, absl::string_view value, Done<absl::Status> done) override {
    store_->Put(key, value, std::move(done));
  }
  void Remove(absl::string_view key, Done<absl::StatusOr<bool>> done) override {
    store_->Remove(key, std::move(done));
  }
  void Increment(absl::string_view key, int64_t delta,
                 Done<absl::StatusOr<int64_t>> done) override {
    store_->Increment(key, delta, std::move(done));
  }
  bool transactional() const override { return false; }

 private:
  Store* const store_;
  ReadBatch batch_;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_SESSION_OPS_H_
