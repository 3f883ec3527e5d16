// Strings as the data commands store and read them (typed_value.h's codec): what a
// stored value holds as a string, the bytes to store for one, the size check, and
// several of them stored.
//
// Pure functions but PutPairs (KeyOps's thread rules); views returned point into the
// arguments.
#ifndef FARM_KV_RESP_STRING_VALUE_H_
#define FARM_KV_RESP_STRING_VALUE_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/resp_commands.h"
#include "kv/store.h"

namespace farm::kv::resp {

// The string a stored value holds: nullopt for a missing key, WRONGTYPE (a RedisError)
// for another type, DataLoss for a corrupt type tag. The view points into `v`.
absl::StatusOr<std::optional<absl::string_view>> StringOf(const Value& v);

// The bytes to store for string `s`: `s` itself, or its escaped copy, which *holder then
// owns (keep it until the Put's callback has run).
absl::string_view StoredString(absl::string_view s, std::shared_ptr<std::string>* holder);

// An error reply when string `s`, as stored, is over the store's value limit.
std::optional<std::string> CheckStringSize(absl::string_view s, const StoreLimits& limits);

// Puts the strings of call->args() = name k1 v1 k2 v2 ... on `ops`, one after another
// (MSET, MSETNX); then done(reply), or done(the first error) — the Puts after it are
// skipped.
void PutPairs(std::shared_ptr<const Call> call, std::shared_ptr<KeyOps> ops, std::string reply,
              Done<absl::StatusOr<std::string>> done);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_STRING_VALUE_H_
