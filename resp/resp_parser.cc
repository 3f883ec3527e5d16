#include "resp/resp_parser.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "resp/strict_int.h"

namespace farm::resp {
namespace {

constexpr size_t kCompactAfterBytes = 4096;
// Buffers that grew for one big request give their memory back once idle.
constexpr size_t kMaxIdleCapacity = 1 << 20;
constexpr size_t kMaxRetainedArgCapacity = 64 * 1024;

void AssignArg(std::string& arg, const char* data, size_t len) {
  if (arg.capacity() > kMaxRetainedArgCapacity && len < arg.capacity() / 4) {
    std::string(data, len).swap(arg);
  } else {
    arg.assign(data, len);
  }
}

}  // namespace

RespParserLimits UnauthenticatedLimits(const RespParserLimits& limits) {
  RespParserLimits tight = limits;
  tight.max_multibulk_len = std::min<int64_t>(limits.max_multibulk_len, 10);
  tight.max_bulk_bytes = std::min<int64_t>(limits.max_bulk_bytes, 16384);
  tight.unauthenticated = true;
  return tight;
}

RespParser::RespParser(const RespParserLimits& limits) : limits_(limits) {}

void RespParser::Feed(absl::string_view bytes) {
  Compact();
  buffer_.append(bytes.data(), bytes.size());
}

void RespParser::Compact() {
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
    if (buffer_.capacity() > kMaxIdleCapacity) std::string().swap(buffer_);
  } else if (pos_ >= kCompactAfterBytes && pos_ * 2 >= buffer_.size()) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
}

RespParser::Result RespParser::Fail(absl::string_view message) {
  error_ = absl::StrCat("ERR Protocol error: ", message);
  multibulk_remaining_ = 0;
  argc_ = 0;
  return Result::kError;
}

void RespParser::Advance(size_t n) {
  pos_ += n;
  scanned_ = 0;
}

std::string& RespParser::NextArg() {
  if (argc_ == args_.size()) args_.emplace_back();
  return args_[argc_++];
}

RespParser::Result RespParser::Parse() {
  if (failed()) return Result::kError;
  for (;;) {
    if (multibulk_remaining_ > 0) return ParseMultibulk();
    // Between requests.
    if (pos_ == buffer_.size()) {
      Compact();
      return Result::kNeedMore;
    }
    argc_ = 0;
    if (buffer_[pos_] != '*') {
      const Result r = ParseInline();
      if (r == Result::kRequest && argc_ == 0) continue;  // an empty line
      return r;
    }
    absl::string_view line;
    const Result r = ReadHeaderLine("too big mbulk count string", &line);
    if (r != Result::kRequest) return r;
    int64_t count = 0;
    if (!ParseStrictInt64(line.substr(1), &count)) return Fail("invalid multibulk length");
    if (count > limits_.max_multibulk_len) {
      return Fail(limits_.unauthenticated ? "unauthenticated multibulk length"
                                          : "invalid multibulk length");
    }
    Advance(line.size() + 2);
    if (count <= 0) continue;  // "*0", "*-1": no request
    multibulk_remaining_ = count;
    bulk_len_ = -1;
    request_bytes_ = 0;
  }
}

RespParser::Result RespParser::ReadHeaderLine(const char* too_big_error, absl::string_view* line) {
  const char* begin = buffer_.data() + pos_;
  const size_t available = buffer_.size() - pos_;
  const void* cr = std::memchr(begin + scanned_, '\r', available - scanned_);
  if (cr == nullptr) {
    if (available > limits_.max_inline_bytes) return Fail(too_big_error);
    scanned_ = available;
    return Result::kNeedMore;
  }
  const size_t len = static_cast<size_t>(static_cast<const char*>(cr) - begin);
  if (len > limits_.max_inline_bytes) return Fail(too_big_error);
  if (len + 1 == available) return Result::kNeedMore;  // the \n has not arrived yet
  if (begin[len + 1] != '\n') {
    return Fail(begin[0] == '*' ? "invalid multibulk length" : "invalid bulk length");
  }
  *line = absl::string_view(begin, len);
  return Result::kRequest;
}

RespParser::Result RespParser::ParseMultibulk() {
  while (multibulk_remaining_ > 0) {
    if (bulk_len_ < 0) {
      if (pos_ == buffer_.size()) return Result::kNeedMore;
      if (buffer_[pos_] != '$') {
        return Fail(absl::StrCat("expected '$', got '", absl::string_view(&buffer_[pos_], 1), "'"));
      }
      absl::string_view line;
      const Result r = ReadHeaderLine("too big bulk count string", &line);
      if (r != Result::kRequest) return r;
      int64_t len = 0;
      if (!ParseStrictInt64(line.substr(1), &len) || len < 0) return Fail("invalid bulk length");
      if (len > limits_.max_bulk_bytes) {
        return Fail(limits_.unauthenticated ? "unauthenticated bulk length"
                                            : "invalid bulk length");
      }
      request_bytes_ += static_cast<uint64_t>(len) + 16;
      if (request_bytes_ > limits_.max_request_bytes) return Fail("request too big");
      Advance(line.size() + 2);
      bulk_len_ = len;
    }
    const size_t need = static_cast<size_t>(bulk_len_) + 2;
    if (buffer_.size() - pos_ < need) {
      Compact();
      return Result::kNeedMore;
    }
    const char* data = buffer_.data() + pos_;
    if (data[bulk_len_] != '\r' || data[bulk_len_ + 1] != '\n') {
      return Fail("expected CRLF after bulk data");
    }
    AssignArg(NextArg(), data, static_cast<size_t>(bulk_len_));
    Advance(need);
    bulk_len_ = -1;
    --multibulk_remaining_;
  }
  return Result::kRequest;
}

RespParser::Result RespParser::ParseInline() {
  const char* begin = buffer_.data() + pos_;
  const size_t available = buffer_.size() - pos_;
  const void* nl = std::memchr(begin + scanned_, '\n', available - scanned_);
  if (nl == nullptr) {
    if (available > limits_.max_inline_bytes) return Fail("too big inline request");
    scanned_ = available;
    return Result::kNeedMore;
  }
  size_t len = static_cast<size_t>(static_cast<const char*>(nl) - begin);
  Advance(len + 1);
  if (len > 0 && begin[len - 1] == '\r') --len;
  if (!SplitInline(absl::string_view(begin, len))) return Fail("unbalanced quotes in request");
  return Result::kRequest;
}

bool RespParser::SplitInline(absl::string_view line) {
  // Redis's sdssplitargs: words between spaces; "..." with \n \r \t \b \a \xHH and
  // \<any> escapes; '...' with \' only; a quote opens inside a word too; a closing
  // quote must end the word; a NUL byte ends the line (as a C string would).
  const char* p = line.data();
  const char* const end = p + line.size();
  auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  auto hex = [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
  auto hex_value = [](char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; };
  for (;;) {
    while (p < end && *p != '\0' && space(*p)) ++p;
    if (p == end || *p == '\0') return true;
    std::string& arg = NextArg();
    arg.clear();
    enum { kBare, kDouble, kSingle } quote = kBare;
    for (bool done = false; !done;) {
      const char c = p < end ? *p : '\0';
      if (quote == kDouble) {
        if (c == '\\' && end - p >= 4 && p[1] == 'x' && hex(p[2]) && hex(p[3])) {
          arg.push_back(static_cast<char>(hex_value(p[2]) * 16 + hex_value(p[3])));
          p += 3;
        } else if (c == '\\' && end - p >= 2 && p[1] != '\0') {
          ++p;
          switch (*p) {
            case 'n': arg.push_back('\n'); break;
            case 'r': arg.push_back('\r'); break;
            case 't': arg.push_back('\t'); break;
            case 'b': arg.push_back('\b'); break;
            case 'a': arg.push_back('\a'); break;
            default: arg.push_back(*p); break;
          }
        } else if (c == '"') {
          if (end - p >= 2 && p[1] != '\0' && !space(p[1])) return false;
          done = true;
        } else if (c == '\0') {
          return false;  // unterminated
        } else {
          arg.push_back(c);
        }
      } else if (quote == kSingle) {
        if (c == '\\' && end - p >= 2 && p[1] == '\'') {
          ++p;
          arg.push_back('\'');
        } else if (c == '\'') {
          if (end - p >= 2 && p[1] != '\0' && !space(p[1])) return false;
          done = true;
        } else if (c == '\0') {
          return false;
        } else {
          arg.push_back(c);
        }
      } else {
        switch (c) {
          case ' ': case '\n': case '\r': case '\t': case '\0': done = true; break;
          case '"': quote = kDouble; break;
          case '\'': quote = kSingle; break;
          default: arg.push_back(c); break;
        }
      }
      if (p < end && *p != '\0') ++p;
    }
  }
}

}  // namespace farm::resp
