// RespParser: an incremental parser of RESP2 requests (what a Redis client sends).
//
// Two request forms, as in Redis:
//   - multibulk:  *<n>\r\n  then n times  $<len>\r\n<len bytes>\r\n
//   - inline:     words separated by spaces/tabs, ended by \n (a \r before it is
//                 dropped), quoted as Redis quotes them (sdssplitargs): "a b" is one
//                 word, with the escapes \n \r \t \b \a \xHH and \<any>; 'a b' too,
//                 with \' only; a closing quote must end its word. A NUL byte ends
//                 the line's words, as in sdssplitargs (departure: Redis itself
//                 never completes such a line — it looks for the \n with strchr —
//                 until it is too big).
// Bytes arrive in any split (Feed); several requests may arrive in one Feed
// (pipelining). Parse returns one request at a time.
//
// Limits (checked before any byte of the thing they bound is buffered for it):
//   - a multibulk count above max_multibulk_len, or not a strict decimal integer
//       -> "ERR Protocol error: invalid multibulk length"
//   - a bulk length above max_bulk_bytes, negative, or not a strict decimal integer
//       -> "ERR Protocol error: invalid bulk length"
//   - a header line longer than max_inline_bytes without \r\n
//       -> "ERR Protocol error: too big mbulk count string" / "too big bulk count string"
//   - an inline request longer than max_inline_bytes without \n
//       -> "ERR Protocol error: too big inline request"
//   - an inline quote not closed, or closed inside a word
//       -> "ERR Protocol error: unbalanced quotes in request"
//   - a multibulk request whose arguments total more than max_request_bytes
//       -> "ERR Protocol error: request too big"
//   - anything else malformed (no '$', a header not ended by \r\n, bulk data not
//     followed by \r\n) -> "ERR Protocol error: <what>"
// After an error the parser stays failed: every later Parse returns kError with the
// same message. A Redis server replies with the error and closes the connection.
//
// A multibulk header "*0" or "*-1" and an empty inline line are no request: they are
// skipped, as Redis does.
//
// Memory: the input buffer holds at most the unparsed bytes (consumed bytes are
// dropped as parsing proceeds), so it is bounded by one partial request plus what the
// caller fed since the last Parse. Argument strings are reused from request to
// request (a caller may swap them out of args() and give others back).
//
// Not thread-safe; one parser per connection.
#ifndef FARM_RESP_RESP_PARSER_H_
#define FARM_RESP_RESP_PARSER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace farm::resp {

struct RespParserLimits {
  int64_t max_multibulk_len = 1024 * 1024;
  int64_t max_bulk_bytes = 512ll * 1024 * 1024;
  size_t max_inline_bytes = 64 * 1024;
  // Sum of one multibulk request's argument lengths (plus 16 bytes per argument).
  uint64_t max_request_bytes = 1024ull * 1024 * 1024;
  // Set by UnauthenticatedLimits: a count or length over the limit is reported as
  // "unauthenticated multibulk length" / "unauthenticated bulk length".
  bool unauthenticated = false;
};

// Redis 7's tighter limits for a client that has not authenticated yet.
RespParserLimits UnauthenticatedLimits(const RespParserLimits& limits);

class RespParser {
 public:
  enum class Result {
    kRequest,   // args() holds one request (at least one argument)
    kNeedMore,  // every complete request has been returned; feed more bytes
    kError,     // a protocol error; see error()
  };

  explicit RespParser(const RespParserLimits& limits = {});

  // Appends received bytes.
  void Feed(absl::string_view bytes);
  // Parses the next request. The previous request's args() become invalid.
  Result Parse();

  // The request last returned by kRequest. The caller may modify or swap the strings
  // (they are reused storage, overwritten by the next request).
  absl::Span<std::string> args() { return absl::MakeSpan(args_.data(), argc_); }
  // The error reply text (without '-' and CRLF), once Parse returned kError.
  const std::string& error() const { return error_; }
  bool failed() const { return !error_.empty(); }
  // Bytes fed but not yet consumed by Parse.
  size_t buffered_bytes() const { return buffer_.size() - pos_; }

  // Limits apply from the next header parsed on.
  void set_limits(const RespParserLimits& limits) { limits_ = limits; }
  const RespParserLimits& limits() const { return limits_; }

 private:
  Result ParseInline();
  // The words of one inline line into args_; false for unbalanced quotes.
  bool SplitInline(absl::string_view line);
  Result ParseMultibulk();
  // Finds a "\r\n"-terminated line starting at pos_; returns kNeedMore/kError, or
  // kRequest with *line set (pos_ is not moved).
  Result ReadHeaderLine(const char* too_big_error, absl::string_view* line);
  Result Fail(absl::string_view message);
  void Advance(size_t n);  // consumes n bytes
  std::string& NextArg();
  void Compact();

  RespParserLimits limits_;
  std::string buffer_;
  size_t pos_ = 0;      // first unconsumed byte of buffer_
  size_t scanned_ = 0;  // bytes from pos_ known to hold no line end (no rescans)

  // Multibulk state between Parse calls.
  int64_t multibulk_remaining_ = 0;  // arguments still to read; 0 = between requests
  int64_t bulk_len_ = -1;            // length of the argument being read; -1 = need header
  uint64_t request_bytes_ = 0;

  std::vector<std::string> args_;  // capacity reused; args_[0, argc_) is the request
  size_t argc_ = 0;
  std::string error_;
};

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_PARSER_H_
