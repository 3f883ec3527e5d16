// UniqueFd: an owned file descriptor, closed on destruction — for services that serve a
// protocol on sockets watched by their Context (Context::WatchFd). The layers' own type
// (farm/base/unique_fd.h).
#ifndef FARM_API_UNIQUE_FD_H_
#define FARM_API_UNIQUE_FD_H_

#include "farm/base/unique_fd.h"

#endif  // FARM_API_UNIQUE_FD_H_
