// Mutex, MutexLock, CondVar and Notification: the project's locking primitives.
//
// Why not absl::Mutex: Debian's Abseil is built without ThreadSanitizer annotations, so
// TSan cannot see absl::Mutex's synchronisation and reports every access it protects
// as a race. These wrap the standard library (whose pthread calls TSan intercepts) and
// keep Abseil's thread-safety annotations, so clang's -Wthread-safety still checks
// ABSL_GUARDED_BY fields.
#ifndef FARM_BASE_MUTEX_H_
#define FARM_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace farm {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Waits until `pred` holds; `mu` must be held, and is held again on return.
  template <typename Pred>
  void Wait(Mutex* mu, Pred pred) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock, pred);
    lock.release();
  }
  // As Wait, giving up after `timeout`; returns whether `pred` holds.
  template <typename Pred>
  bool WaitFor(Mutex* mu, absl::Duration timeout, Pred pred) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool ok = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout), pred);
    lock.release();
    return ok;
  }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

// A one-shot event: Notify once, wait any number of times from any thread.
class Notification {
 public:
  void Notify() {
    MutexLock lock(&mu_);
    notified_ = true;
    cv_.SignalAll();
  }
  bool HasBeenNotified() {
    MutexLock lock(&mu_);
    return notified_;
  }
  void WaitForNotification() {
    MutexLock lock(&mu_);
    cv_.Wait(&mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return notified_; });
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) {
    MutexLock lock(&mu_);
    return cv_.WaitFor(&mu_, timeout, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS { return notified_; });
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace farm

#endif  // FARM_BASE_MUTEX_H_
