#include "tests/kv/resp/resp_reply_reader.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace farm::kv::testing {
namespace {

enum class Step { kDone, kNeedMore, kMalformed };

// Decodes one reply at bytes[*pos]; on kDone advances *pos and sets *text.
Step DecodeOne(absl::string_view bytes, size_t* pos, std::string* text, int depth) {
  if (depth > 32) return Step::kMalformed;
  if (*pos >= bytes.size()) return Step::kNeedMore;
  const size_t eol = bytes.find("\r\n", *pos);
  if (eol == absl::string_view::npos) return Step::kNeedMore;
  const char type = bytes[*pos];
  const absl::string_view line = bytes.substr(*pos + 1, eol - *pos - 1);
  size_t next = eol + 2;
  int64_t n = 0;
  switch (type) {
    case '+':
    case '-':
      *text = absl::StrCat(absl::string_view(&type, 1), line);
      break;
    case ':':
      if (!absl::SimpleAtoi(line, &n)) return Step::kMalformed;
      *text = absl::StrCat(":", n);
      break;
    case '$':
      if (!absl::SimpleAtoi(line, &n) || n < -1) return Step::kMalformed;
      if (n == -1) {
        *text = "(nil)";
        break;
      }
      if (bytes.size() < next + static_cast<size_t>(n) + 2) return Step::kNeedMore;
      if (bytes.substr(next + n, 2) != "\r\n") return Step::kMalformed;
      *text = std::string(bytes.substr(next, n));
      next += n + 2;
      break;
    case '*': {
      if (!absl::SimpleAtoi(line, &n) || n < -1) return Step::kMalformed;
      if (n == -1) {
        *text = "(nil array)";
        break;
      }
      std::string out = "[";
      for (int64_t i = 0; i < n; ++i) {
        std::string element;
        const Step s = DecodeOne(bytes, &next, &element, depth + 1);
        if (s != Step::kDone) return s;
        absl::StrAppend(&out, i == 0 ? "" : ", ", element);
      }
      *text = out + "]";
      break;
    }
    default:
      return Step::kMalformed;
  }
  *pos = next;
  return Step::kDone;
}

}  // namespace

DecodedReplies DecodeReplies(absl::string_view bytes) {
  DecodedReplies out;
  for (;;) {
    std::string text;
    size_t pos = out.consumed;
    const Step s = DecodeOne(bytes, &pos, &text, 0);
    if (s == Step::kNeedMore) return out;
    if (s == Step::kMalformed) {
      out.malformed = true;
      return out;
    }
    out.replies.push_back(std::move(text));
    out.consumed = pos;
  }
}

}  // namespace farm::kv::testing
