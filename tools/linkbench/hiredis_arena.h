// HiredisArena: a hiredis reader's reply objects carved from blocks this arena keeps,
// instead of hiredis's default of one calloc per reply element (and a malloc per
// string). A LINK.RANGE reply of 10,000 links is 80,001 objects: with the default the
// driver spent more CPU in malloc and free than the graph service spent answering
// (README, "Replies encoded in one pass").
//
// Contract: a reply built here is valid until the reader starts the next reply (the
// arena is rewound when a reply's first object is made): read a reply, finish with it,
// then read the next — one command at a time, or a pipeline's replies one after
// another. Never pass such a reply to freeReplyObject (freeArenaReply is a no-op
// deleter for it). The arena must outlive the reader it is attached to (or the reader's
// next read). Not thread-safe: one arena per connection.
#ifndef FARM_TOOLS_LINKBENCH_HIREDIS_ARENA_H_
#define FARM_TOOLS_LINKBENCH_HIREDIS_ARENA_H_

#include <hiredis/hiredis.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace farm::linkbench {

class HiredisArena {
 public:
  HiredisArena() = default;
  HiredisArena(const HiredisArena&) = delete;
  HiredisArena& operator=(const HiredisArena&) = delete;

  // Makes `reader` (a redisContext's c->reader) build its replies here.
  void Attach(redisReader* reader);

  // Bytes of the blocks kept (for tests: they are reused, not regrown per reply).
  size_t capacity() const;

 private:
  static void* CreateString(const redisReadTask* task, char* str, size_t len);
  static void* CreateArray(const redisReadTask* task, int elements);
  static void* CreateInteger(const redisReadTask* task, long long value);
  static void* CreateNil(const redisReadTask* task);
  static void FreeObject(void* reply) {}  // the arena owns it
  static constexpr redisReplyObjectFunctions kFunctions = {CreateString, CreateArray, CreateInteger, CreateNil,
                                                           FreeObject};

  // A new object of `type` for `task`, linked into its parent array; the arena is
  // rewound first when the task starts a reply.
  static redisReply* NewReply(const redisReadTask* task, int type);
  // `bytes` of storage aligned for any object, valid until the next Rewind.
  void* Allocate(size_t bytes);
  void Rewind();

  static constexpr size_t kBlockBytes = 64 * 1024;
  struct Block {
    std::unique_ptr<char[]> bytes;
    size_t size = 0;
  };
  std::vector<Block> blocks_;
  size_t current_ = 0;  // the block being carved
  size_t used_ = 0;     // bytes of it taken
};

}  // namespace farm::linkbench

#endif  // FARM_TOOLS_LINKBENCH_HIREDIS_ARENA_H_
