// Logging for applications: FARM_LOG(level, format, ...) to the process's log, the same
// facility as the layers below (farm/base/log.h).
#ifndef FARM_API_LOG_H_
#define FARM_API_LOG_H_

#include "farm/base/log.h"

#endif  // FARM_API_LOG_H_
