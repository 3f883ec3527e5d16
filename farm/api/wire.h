// Wire encoding for applications: little-endian fixed-width integers (LoadLe, StoreLe,
// WireWriter, WireReader), the same helpers the layers below use for their own messages
// and records (farm/base/wire.h). Applications encode their messages, directories and
// object formats with these.
#ifndef FARM_API_WIRE_H_
#define FARM_API_WIRE_H_

#include "farm/base/wire.h"

#endif  // FARM_API_WIRE_H_
