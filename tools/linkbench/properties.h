// Properties: a Java .properties file (LinkBench's FBWorkload.properties) as a map of
// key to value, with typed getters whose errors name the key and the file.
//
// Supported syntax: `key = value` or `key: value` lines, `#` and `!` comments, blank
// lines, surrounding whitespace trimmed. (Line continuations and escapes are not used
// by LinkBench's files and are not supported.) Later lines override earlier ones;
// Set() overrides anything read. Not thread-safe; immutable use is.
#ifndef FARM_TOOLS_LINKBENCH_PROPERTIES_H_
#define FARM_TOOLS_LINKBENCH_PROPERTIES_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace farm::linkbench {

class Properties {
 public:
  // NotFound when the file cannot be read; InvalidArgument on a line without a key.
  static absl::StatusOr<Properties> Load(const std::string& path);
  static absl::StatusOr<Properties> Parse(absl::string_view text, const std::string& origin);

  bool Has(const std::string& key) const { return values_.contains(key); }
  void Set(const std::string& key, const std::string& value) { values_[key] = value; }

  // NotFound when missing; InvalidArgument when not a number.
  absl::StatusOr<std::string> GetString(const std::string& key) const;
  absl::StatusOr<double> GetDouble(const std::string& key) const;
  absl::StatusOr<int64_t> GetInt(const std::string& key) const;
  // The value, or `fallback` when the key is missing (InvalidArgument when malformed).
  absl::StatusOr<double> GetDouble(const std::string& key, double fallback) const;
  absl::StatusOr<int64_t> GetInt(const std::string& key, int64_t fallback) const;

  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
  std::map<std::string, std::string> values_;
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_PROPERTIES_H_
