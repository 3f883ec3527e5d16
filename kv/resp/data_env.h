// What the data commands (data_commands.h: strings and keys; hash_commands.h: hashes)
// share: their environment, how they hand back a reply, and RunAtomically /
// RunAtomicallyOnKey, which make several store operations one atomic step.
//
// Thread and lifetime rules are KeyOps's (key_ops.h).
#ifndef FARM_KV_RESP_DATA_ENV_H_
#define FARM_KV_RESP_DATA_ENV_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/write_combiner.h"
#include "kv/store.h"

namespace farm::kv::resp {

// Receives one encoded reply.
using ReplyDone = absl::AnyInvocable<void(std::string reply)>;

struct DataEnv {
  Store* store = nullptr;  // for the transactions of commands that must be atomic
  StoreLimits limits;
  int max_txn_attempts = 100;
  // The worker thread's (write_combiner.h); null: none.
  WriteCombiner* combiner = nullptr;
};

// Runs `body` so that its operations are atomic together: on `ops` when that is a
// transaction already or when the body does a single operation (needs_txn false), else
// in a transaction of its own, retried on conflicts (env.max_txn_attempts). done gets
// the reply, or the error as a reply (nothing written).
void RunAtomically(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, bool needs_txn,
                   CommandBody body, ReplyDone done);

// RunAtomically(needs_txn = true) for a body that reads and writes `key` alone (a
// read-modify-write: HSET, SET NX ...). Outside a transaction it goes through
// env.combiner when there is one, in order with the thread's other writes of the key.
// `key` stays valid until done has run.
void RunAtomicallyOnKey(const DataEnv& env, const std::shared_ptr<KeyOps>& ops,
                        absl::string_view key, CommandBody body, ReplyDone done);

// ops->Put, but outside a transaction through env.combiner when there is one. `key` and
// `value` stay valid until done has run.
void PutOnKey(const DataEnv& env, const std::shared_ptr<KeyOps>& ops, absl::string_view key,
              absl::string_view value, Done<absl::Status> done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_DATA_ENV_H_
