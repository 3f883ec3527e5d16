// LinearTable: what every thread of a node shares of an opened linear-probing table:
// the probe map (where slots are) and the read sizes of the model for this table
// (kv/linear/read_size_model.h). Immutable once built.
#ifndef FARM_KV_LINEAR_LINEAR_TABLE_H_
#define FARM_KV_LINEAR_LINEAR_TABLE_H_

#include <memory>

#include "kv/linear/probe_map.h"
#include "kv/linear/read_size_model.h"

namespace farm::kv::linear {

struct LinearTable {
  std::shared_ptr<const ProbeMap> map;
  ReadSizeTable read_sizes;
  double slot_wire_bytes = 0;  // w of the model: a group's stored bytes / G
};

// The table for `map`: R* for every load factor under `options`, with w from the
// groups' stride. R is at most max_probe and what 8 READs of 8 groups hold.
std::shared_ptr<const LinearTable> MakeLinearTable(std::shared_ptr<const ProbeMap> map,
                                                   const ReadSizeOptions& options);

}  // namespace farm::kv::linear

#endif  // FARM_KV_LINEAR_LINEAR_TABLE_H_
