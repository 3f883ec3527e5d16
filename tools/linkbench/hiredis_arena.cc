#include "tools/linkbench/hiredis_arena.h"

#include <algorithm>
#include <cstring>
#include <memory>

namespace farm::linkbench {

void HiredisArena::Attach(redisReader* reader) {
  reader->fn = const_cast<redisReplyObjectFunctions*>(&kFunctions);
  reader->privdata = this;
}

size_t HiredisArena::capacity() const {
  size_t bytes = 0;
  for (const Block& b : blocks_) bytes += b.size;
  return bytes;
}

void HiredisArena::Rewind() {
  current_ = 0;
  used_ = 0;
}

void* HiredisArena::Allocate(size_t bytes) {
  constexpr size_t kAlign = alignof(std::max_align_t);
  bytes = (bytes + kAlign - 1) / kAlign * kAlign;
  while (current_ < blocks_.size() && used_ + bytes > blocks_[current_].size) {
    ++current_;
    used_ = 0;
  }
  if (current_ == blocks_.size()) {
    const size_t size = std::max(kBlockBytes, bytes);
    blocks_.push_back(Block{std::make_unique<char[]>(size), size});  // aligned as operator new aligns
    used_ = 0;
  }
  void* p = blocks_[current_].bytes.get() + used_;
  used_ += bytes;
  return p;
}

redisReply* HiredisArena::NewReply(const redisReadTask* task, int type) {
  auto* arena = static_cast<HiredisArena*>(task->privdata);
  if (task->parent == nullptr) arena->Rewind();  // a new reply: the last one is done with
  auto* r = static_cast<redisReply*>(arena->Allocate(sizeof(redisReply)));
  std::memset(r, 0, sizeof(redisReply));
  r->type = type;
  if (task->parent != nullptr) {
    auto* parent = static_cast<redisReply*>(task->parent->obj);
    parent->element[task->idx] = r;
  }
  return r;
}

void* HiredisArena::CreateString(const redisReadTask* task, char* str, size_t len) {
  redisReply* r = NewReply(task, task->type);
  auto* arena = static_cast<HiredisArena*>(task->privdata);
  char* copy = static_cast<char*>(arena->Allocate(len + 1));
  std::memcpy(copy, str, len);
  copy[len] = '\0';
  r->str = copy;
  r->len = len;
  return r;
}

void* HiredisArena::CreateArray(const redisReadTask* task, int elements) {
  redisReply* r = NewReply(task, REDIS_REPLY_ARRAY);
  if (elements > 0) {
    auto* arena = static_cast<HiredisArena*>(task->privdata);
    r->element = static_cast<redisReply**>(arena->Allocate(sizeof(redisReply*) * static_cast<size_t>(elements)));
    std::memset(r->element, 0, sizeof(redisReply*) * static_cast<size_t>(elements));
  }
  r->elements = static_cast<size_t>(std::max(elements, 0));
  return r;
}

void* HiredisArena::CreateInteger(const redisReadTask* task, long long value) {
  redisReply* r = NewReply(task, REDIS_REPLY_INTEGER);
  r->integer = value;
  return r;
}

void* HiredisArena::CreateNil(const redisReadTask* task) { return NewReply(task, REDIS_REPLY_NIL); }

}  // namespace farm::linkbench
