// Synchronisation for applications' own threads and start-up code: Mutex, MutexLock,
// CondVar and Notification, annotated for Clang's thread-safety analysis and visible to
// ThreadSanitizer — the same types the layers below use (farm/base/mutex.h). Worker
// threads never block on them: continuations are how a worker waits.
#ifndef FARM_API_SYNC_H_
#define FARM_API_SYNC_H_

#include "farm/base/mutex.h"

#endif  // FARM_API_SYNC_H_
