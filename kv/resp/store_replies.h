// How store results and argument checks become Redis error replies. Each function
// returns one encoded reply ("-ERR ...\r\n").
#ifndef FARM_KV_RESP_STORE_REPLIES_H_
#define FARM_KV_RESP_STORE_REPLIES_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kv/store.h"

namespace farm::kv::resp {

// Any store error: "-ERR <message>" (the code's name when the message is empty),
// without the store's internals (WithoutInternalAddresses); a RedisError's line as it is.
std::string StoreErrorReply(const absl::Status& status);

// An error a command decides (not the store), carrying its complete Redis reply line,
// e.g. "ERR hash value is not an integer": StoreErrorReply answers the line as it is.
// FailedPrecondition, marked by a payload.
absl::Status RedisError(absl::string_view line);
bool IsRedisError(const absl::Status& status);
// RedisError("WRONGTYPE Operation against a key holding the wrong kind of value").
absl::Status WrongTypeError();
// `message` without the store's internals: addresses and pointers (r<region>+0x<offset>,
// with [size]#incarnation, raw: or not) become "an object"; region, node, backup and
// transaction ids (after those words, lists joined by ',' too) "a region", "a node",
// "a backup", "a transaction" (plural words keep their plural, without the ids).
std::string WithoutInternalAddresses(absl::string_view message);

// An error of Store::Increment / StoreTxn::Increment, in Redis's words:
// InvalidArgument about overflow, or OutOfRange -> "ERR increment or decrement would
// overflow"; other InvalidArgument -> "ERR value is not an integer or out of range";
// anything else as StoreErrorReply.
std::string IncrementErrorReply(const absl::Status& status);

// True for Increment's InvalidArgument about a stored value that is not an integer
// (not about overflow): IncrementErrorReply would answer NotAnIntegerReply.
bool IsNotAnInteger(const absl::Status& status);

// "-ERR value is not an integer or out of range": an argument that is not an integer.
std::string NotAnIntegerReply();

// True when `key` is longer than the store can hold (a limit of 0: the store states
// none). No such key can exist: commands that only read or remove keys answer as for a
// missing key (Redis has no key limit, so GET of one is nil there too); commands that
// may create one refuse it (CheckKeySize).
bool OverKeyLimit(absl::string_view key, const StoreLimits& limits);

// An error reply when `key` / `value` exceeds the store's limits, else nullopt. A limit
// of 0 means the store states none.
std::optional<std::string> CheckKeySize(absl::string_view key, const StoreLimits& limits);
std::optional<std::string> CheckValueSize(absl::string_view value, const StoreLimits& limits);
// For a value that takes `stored_bytes` in the store (an escaped string, a hash's
// encoding): a RedisError "ERR value is too large (N bytes as stored; ...)" over the
// limit, else OK.
absl::Status CheckStoredSize(size_t stored_bytes, const StoreLimits& limits);

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_STORE_REPLIES_H_
