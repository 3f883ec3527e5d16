// HashValue: one hash as a command reads or changes it — decoded from a stored value
// (typed_value.h), edited, encoded again. Lookups are linear for small hashes and use
// an index built on first need for larger ones.
//
// Holds views: into the stored value it was loaded from and into the strings given to
// Set, which must outlive the HashValue (or at least its last Encode). Not thread-safe.
#ifndef FARM_KV_RESP_HASH_VALUE_H_
#define FARM_KV_RESP_HASH_VALUE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kv/resp/key_ops.h"
#include "kv/resp/typed_value.h"

namespace farm::kv::resp {

class HashValue {
 public:
  // A missing key loads as the empty hash. WRONGTYPE (store_replies.h) when `stored`
  // holds a string; DataLoss when it is corrupt.
  absl::Status Load(const Value& stored);
  absl::Status Load(Value&& stored) = delete;  // the views would dangle
  // From a hash encoding (TypedView::body of a hash).
  absl::Status LoadBody(absl::string_view body);

  size_t size() const { return pairs_.size(); }
  bool empty() const { return pairs_.empty(); }
  std::optional<absl::string_view> Get(absl::string_view field);
  // Sets field to value (in place when it exists, else at the end); true when new.
  bool Set(absl::string_view field, absl::string_view value);
  // true when the field existed.
  bool Remove(absl::string_view field);

  // The stored form; the hash must not be empty (a hash without fields is no key).
  size_t EncodedSize() const { return EncodedHashSize(pairs_); }
  std::string Encode() const { return EncodeHash(pairs_); }

 private:
  void Clear();
  std::optional<size_t> IndexOf(absl::string_view field);

  std::vector<HashPair> pairs_;
  // Field -> position of pairs_[0, indexed_); built when pairs_ is large.
  absl::flat_hash_map<absl::string_view, size_t> index_;
  size_t indexed_ = 0;
};

}  // namespace farm::kv::resp

#endif  // FARM_KV_RESP_HASH_VALUE_H_
