// ReaderClient<Derived, Reader>: the part of a KvClient (kv/kv_client.h) that the
// layouts with a lock-free Reader and shipped updates (hopscotch, linear, chained)
// share: Get and MultiGet check the keys' limits and go to the Reader; Update checks
// the key's and value's limits and ships the update to the machine that runs the key's
// updates (the table's update message, kv/update_dispatch.h there), decoding its reply.
//
// Derived is the layout's client (CRTP: no virtual call is added per operation); it
// provides
//   Addr UpdateTarget(absl::string_view key) const;  // an address on the machine that
//                                                    // runs the key's updates
// and the rest of KvClient (Scan, BeginTxn). Reader is the layout's lock-free reader:
// constructed from (Context&, reader arguments...), with Get(key, GetDone),
// MultiGet(keys, MultiGetDone) and stats().
//
// Threads: the owning worker thread only; continuations run there, never inline. The
// client must outlive its operations in flight.
#ifndef FARM_KV_READER_CLIENT_H_
#define FARM_KV_READER_CLIENT_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "farm/api/farm.h"
#include "kv/key_ops.h"
#include "kv/kv_client.h"
#include "kv/messages.h"
#include "kv/store.h"

namespace farm::kv {

template <typename Derived, typename Reader>
class ReaderClient : public KvClient {
 public:
  void Get(absl::string_view key, GetDone done) final {
    if (KeysWithinLimit(ctx_, key, done)) reader_.Get(key, std::move(done));
  }
  void MultiGet(absl::Span<const std::string> keys, MultiGetDone done) final {
    if (KeysWithinLimit(ctx_, keys, done)) reader_.MultiGet(keys, std::move(done));
  }
  // kPut (value), kRemove, kIncrement (delta). InvalidArgument for a key or value over
  // the limits (checked here, nothing is sent); the op's own error in its result.
  void Update(OpKind kind, absl::string_view key, absl::string_view value, int64_t delta,
              Done<absl::StatusOr<KeyOpResult>> done) final {
    if (!UpdateWithinLimits(ctx_, key, value, done)) return;
    const Addr target = static_cast<const Derived&>(*this).UpdateTarget(key);
    const UpdateRequest request{kind, key, value, delta};
    msgSend(ctx_, target, update_msg_, UpdateRequestBytes(request),
            [&request](char* dst) { WriteUpdateRequest(request, dst); },
            [done = std::move(done)](absl::StatusOr<std::string> reply) mutable {
              if (!reply.ok()) return done(reply.status());
              done(DecodeUpdateReply(*reply));
            });
  }
  const LookupStats& lookup_stats() const final { return reader_.stats(); }
  Context& ctx() const final { return ctx_; }

  Reader& reader() { return reader_; }

 protected:
  // Updates go to `update_msg`; the reader is Reader(ctx, reader_args...).
  template <typename... ReaderArgs>
  ReaderClient(Context& ctx, MsgId update_msg, ReaderArgs&&... reader_args)
      : ctx_(ctx),
        update_msg_(update_msg),
        reader_(ctx, std::forward<ReaderArgs>(reader_args)...) {}

 private:
  Context& ctx_;
  const MsgId update_msg_;
  Reader reader_;
};

}  // namespace farm::kv

#endif  // FARM_KV_READER_CLIENT_H_
