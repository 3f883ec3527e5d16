#include "resp/resp_writer.h"

#include "absl/strings/str_cat.h"

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

void RespWriter::Integer(int64_t value) { absl::StrAppend(out_, ":", value, "\r\n"); }

void RespWriter::Bulk(absl::string_view bytes) {
  absl::StrAppend(out_, "$", bytes.size(), "\r\n");
  out_->append(bytes.data(), bytes.size());
  out_->append("\r\n");
}

void RespWriter::NullBulk() { out_->append("$-1\r\n"); }

void RespWriter::OptionalBulk(const std::optional<std::string>& value) {
  if (value.has_value()) {
    Bulk(*value);
  } else {
    NullBulk();
  }
}

void RespWriter::ArrayHeader(size_t count) { absl::StrAppend(out_, "*", count, "\r\n"); }

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

}  // namespace farm::resp
