// Shard: a run of equal, adjacent objects of one region that one machine allocated for a
// sharded table (hopscotch buckets, linear-probing slot groups), as its directory
// publishes it (kv/shard_catalog.h).
#ifndef FARM_KV_SHARD_H_
#define FARM_KV_SHARD_H_

#include <cstdint>

#include "farm/api/farm.h"

namespace farm::kv {

struct Shard {
  Addr first;             // object 0
  uint32_t incarnation;   // every object's (the table's objects are never freed)
  uint32_t stride;        // bytes from one object to the next (the allocator's slot size)
  uint32_t buckets;       // objects in the run, >= 2
  NodeId owner;           // the machine that allocated it
};

}  // namespace farm::kv

#endif  // FARM_KV_SHARD_H_
