// RespWriter: appends RESP2 replies to a caller-owned output buffer.
//
// Error and simple-string texts must not contain CR or LF (they would end the reply
// early and desynchronise the client); the writer replaces each with a space, as
// Redis does for its error replies. Bulk strings carry any bytes.
//
// Not thread-safe; the buffer must outlive the writer.
#ifndef FARM_RESP_RESP_WRITER_H_
#define FARM_RESP_RESP_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace farm::resp {

class RespWriter {
 public:
  explicit RespWriter(std::string* out) : out_(out) {}

  // "+OK\r\n"
  void SimpleString(absl::string_view text);
  // "-ERR message\r\n": `message` starts with the error code ("ERR ...", "NOAUTH ...").
  void Error(absl::string_view message);
  // ":42\r\n"
  void Integer(int64_t value);
  // "$3\r\nabc\r\n"
  void Bulk(absl::string_view bytes);
  // "$-1\r\n"
  void NullBulk();
  // A bulk string, or a null bulk when absent.
  void OptionalBulk(const std::optional<std::string>& value);
  // "*n\r\n"; the caller then writes n replies.
  void ArrayHeader(size_t count);
  // "*-1\r\n"
  void NullArray();
  // Already-encoded replies (e.g. collected for EXEC).
  void Raw(absl::string_view encoded);
  // Room for `bytes` more (a long array's estimated size): saves regrowing the buffer.
  void Reserve(size_t bytes) { out_->reserve(out_->size() + bytes); }

  // The longest encoding of an Integer or of a Bulk's framing (all but its bytes).
  static constexpr size_t kMaxIntegerBytes = 1 + 20 + 2;
  static constexpr size_t kMaxBulkFramingBytes = 1 + 20 + 2 + 2;

 private:
  void AppendLine(char type, absl::string_view text);
  template <typename Int>
  void AppendNumberLine(char type, Int value);

  std::string* out_;
};

// Convenience: one encoded reply.
std::string ErrorReply(absl::string_view message);
std::string SimpleStringReply(absl::string_view text);
std::string IntegerReply(int64_t value);
std::string NullBulkReply();

}  // namespace farm::resp

#endif  // FARM_RESP_RESP_WRITER_H_
