#include "resp/resp_writer.h"

#include <charconv>

namespace farm::resp {

void RespWriter::AppendLine(char type, absl::string_view text) {
  const size_t start = out_->size() + 1;
  out_->push_back(type);
  out_->append(text.data(), text.size());
  for (size_t i = start; i < out_->size(); ++i) {
    char& c = (*out_)[i];
    if (c == '\r' || c == '\n') c = ' ';
  }
  out_->append("\r\n");
}

void RespWriter::SimpleString(absl::string_view text) { AppendLine('+', text); }

void RespWriter::Error(absl::string_view message) { AppendLine('-', message); }

// type, the decimal digits of `value`, CRLF: one append, no temporary.
template <typename Int>
void RespWriter::AppendNumberLine(char type, Int value) {
  char line[1 + 20 + 2];  // type, int64_t's or size_t's longest (20 characters), CRLF
  line[0] = type;
  char* end = std::to_chars(line + 1, line + sizeof(line) - 2, value).ptr;
  *end++ = '\r';
  *end++ = '\n';
  out_->append(line, static_cast<size_t>(end - line));
}

void RespWriter::Integer(int64_t value) { AppendNumberLine(':', value); }

void RespWriter::Bulk(absl::string_view bytes) {
  AppendNumberLine('$', bytes.size());
  out_->append(bytes.data(), bytes.size());
  out_->append("\r\n", 2);
}

void RespWriter::NullBulk() { out_->append("$-1\r\n"); }

void RespWriter::OptionalBulk(const std::optional<std::string>& value) {
  if (value.has_value()) {
    Bulk(*value);
  } else {
    NullBulk();
  }
}

void RespWriter::ArrayHeader(size_t count) { AppendNumberLine('*', count); }

void RespWriter::NullArray() { out_->append("*-1\r\n"); }

void RespWriter::Raw(absl::string_view encoded) { out_->append(encoded.data(), encoded.size()); }

std::string ErrorReply(absl::string_view message) {
  std::string out;
  RespWriter(&out).Error(message);
  return out;
}

std::string SimpleStringReply(absl::string_view text) {
  std::string out;
  RespWriter(&out).SimpleString(text);
  return out;
}

std::string IntegerReply(int64_t value) {
  std::string out;
  RespWriter(&out).Integer(value);
  return out;
}

std::string NullBulkReply() {
  std::string out;
  RespWriter(&out).NullBulk();
  return out;
}

}  // namespace farm::resp
