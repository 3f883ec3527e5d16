// ByteBuffer: a growable FIFO of bytes for non-blocking socket I/O.
// Not thread-safe; owned by whoever owns the socket.
#ifndef FARM_FABRIC_BYTE_BUFFER_H_
#define FARM_FABRIC_BYTE_BUFFER_H_

#include <cstddef>
#include <cstring>
#include <vector>

namespace farm {

class ByteBuffer {
 public:
  // Readable bytes.
  const char* data() const { return buf_.data() + read_; }
  char* data() { return buf_.data() + read_; }
  size_t size() const { return write_ - read_; }
  bool empty() const { return size() == 0; }

  // Drops n readable bytes from the front.
  void Consume(size_t n) {
    read_ += n;
    if (read_ == write_) read_ = write_ = 0;
  }

  // Space for at least n more bytes at the back; Commit(k) makes k of them readable.
  char* Reserve(size_t n) {
    if (buf_.size() - write_ < n) {
      if (read_ > 0) {  // compact before growing
        std::memmove(buf_.data(), buf_.data() + read_, write_ - read_);
        write_ -= read_;
        read_ = 0;
      }
      if (buf_.size() - write_ < n) buf_.resize(std::max(buf_.size() * 2, write_ + n));
    }
    return buf_.data() + write_;
  }
  void Commit(size_t n) { write_ += n; }

  void Append(const void* p, size_t n) {
    std::memcpy(Reserve(n), p, n);
    Commit(n);
  }

  void Clear() { read_ = write_ = 0; }

 private:
  std::vector<char> buf_;
  size_t read_ = 0;
  size_t write_ = 0;
};

}  // namespace farm

#endif  // FARM_FABRIC_BYTE_BUFFER_H_
