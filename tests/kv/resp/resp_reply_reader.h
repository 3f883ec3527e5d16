// Test helper: decodes RESP2 replies (what a server sends) into a compact text form,
// so tests can compare whole reply sequences:
//   +OK -> "+OK"   -ERR x -> "-ERR x"   :5 -> ":5"   $3 abc -> "abc"   $-1 -> "(nil)"
//   *2 [...] -> "[a, :1]"   *-1 -> "(nil array)"
#ifndef FARM_TESTS_KV_RESP_RESP_REPLY_READER_H_
#define FARM_TESTS_KV_RESP_RESP_REPLY_READER_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace farm::kv::testing {

struct DecodedReplies {
  std::vector<std::string> replies;  // complete replies, in order
  size_t consumed = 0;               // bytes they took
  bool malformed = false;            // bytes that are not RESP follow them
};

DecodedReplies DecodeReplies(absl::string_view bytes);

}  // namespace farm::kv::testing

#endif  // FARM_TESTS_KV_RESP_RESP_REPLY_READER_H_
