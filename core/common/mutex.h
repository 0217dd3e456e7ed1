// Mutex, scoped locks and Notification for metaopt code: absl's primitives,
// with their thread-safety annotations, made visible to ThreadSanitizer.
//
// Debian's abseil is not built with -fsanitize=thread. absl::Mutex and
// absl::Notification synchronize through atomics and futex calls that TSan
// does not see, so it would report every access they order as a data race.
// Under TSan (clang's __has_feature(thread_sanitizer) or gcc's
// __SANITIZE_THREAD__) the classes below tell it about each lock, unlock,
// condition wait and notification through <sanitizer/tsan_interface.h>; in
// any other build they are the absl calls alone. Use them instead of
// absl::Mutex, absl::MutexLock, absl::ReaderMutexLock and absl::Notification.
#ifndef METAOPT_CORE_COMMON_MUTEX_H_
#define METAOPT_CORE_COMMON_MUTEX_H_

#include "absl/base/const_init.h"
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define METAOPT_HAVE_TSAN 1
#endif
#endif
#if !defined(METAOPT_HAVE_TSAN) && defined(__SANITIZE_THREAD__)
#define METAOPT_HAVE_TSAN 1
#endif

#ifdef METAOPT_HAVE_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace metaopt {

// The TSan hooks that the classes below call; empty functions without TSan.
namespace tsan_annotations {
#ifdef METAOPT_HAVE_TSAN
inline constexpr unsigned kReadLock = __tsan_mutex_read_lock;
inline void MutexCreate(void* mu) { __tsan_mutex_create(mu, 0); }
inline void MutexDestroy(void* mu) { __tsan_mutex_destroy(mu, 0); }
inline void MutexPreLock(void* mu, unsigned flags) {
  __tsan_mutex_pre_lock(mu, flags);
}
inline void MutexPostLock(void* mu, unsigned flags) {
  __tsan_mutex_post_lock(mu, flags, /*recursion=*/0);
}
inline void MutexPreUnlock(void* mu, unsigned flags) {
  __tsan_mutex_pre_unlock(mu, flags);
}
inline void MutexPostUnlock(void* mu, unsigned flags) {
  __tsan_mutex_post_unlock(mu, flags);
}
inline void Release(const void* addr) {
  __tsan_release(const_cast<void*>(addr));
}
inline void Acquire(const void* addr) {
  __tsan_acquire(const_cast<void*>(addr));
}
#else
inline constexpr unsigned kReadLock = 0;
inline void MutexCreate(void*) {}
inline void MutexDestroy(void*) {}
inline void MutexPreLock(void*, unsigned) {}
inline void MutexPostLock(void*, unsigned) {}
inline void MutexPreUnlock(void*, unsigned) {}
inline void MutexPostUnlock(void*, unsigned) {}
inline void Release(const void*) {}
inline void Acquire(const void*) {}
#endif
}  // namespace tsan_annotations

// absl::Mutex. Thread-safe (it is a mutex). The lock functions carry absl's
// annotations, so clang's -Wthread-safety checks ABSL_GUARDED_BY(mu) fields
// and ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) functions as it does for absl::Mutex.
// Not reentrant.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() { tsan_annotations::MutexCreate(this); }
  // For a mutex with static storage duration:
  //   ABSL_CONST_INIT Mutex mu(absl::kConstInit);
  // (TSan registers it at its first lock.)
  explicit constexpr Mutex(absl::ConstInitType) : mu_(absl::kConstInit) {}
  // REQUIRES: not held.
  ~Mutex() { tsan_annotations::MutexDestroy(this); }

  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    tsan_annotations::MutexPreLock(this, 0);
    mu_.Lock();
    tsan_annotations::MutexPostLock(this, 0);
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    tsan_annotations::MutexPreUnlock(this, 0);
    mu_.Unlock();
    tsan_annotations::MutexPostUnlock(this, 0);
  }
  void ReaderLock() ABSL_SHARED_LOCK_FUNCTION() {
    tsan_annotations::MutexPreLock(this, tsan_annotations::kReadLock);
    mu_.ReaderLock();
    tsan_annotations::MutexPostLock(this, tsan_annotations::kReadLock);
  }
  void ReaderUnlock() ABSL_UNLOCK_FUNCTION() {
    tsan_annotations::MutexPreUnlock(this, tsan_annotations::kReadLock);
    mu_.ReaderUnlock();
    tsan_annotations::MutexPostUnlock(this, tsan_annotations::kReadLock);
  }

  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }
  void AssertReaderHeld() const ABSL_ASSERT_SHARED_LOCK() {
    mu_.AssertReaderHeld();
  }

  // Releases the mutex until `cond` holds, then holds it again. `cond` is
  // evaluated with the mutex held, by this thread or by one that unlocks it.
  void Await(const absl::Condition& cond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
#ifdef METAOPT_HAVE_TSAN
    AnnotatedCondition annotated{this, &cond};
    tsan_annotations::MutexPreUnlock(this, 0);
    mu_.Await(annotated.condition());
    AnnotateRelockAfterWait();
#else
    mu_.Await(cond);
#endif
  }
  // Await that gives up after `timeout`. Returns `cond`'s value; the mutex
  // is held on return either way.
  bool AwaitWithTimeout(const absl::Condition& cond, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
#ifdef METAOPT_HAVE_TSAN
    AnnotatedCondition annotated{this, &cond};
    tsan_annotations::MutexPreUnlock(this, 0);
    const bool result = mu_.AwaitWithTimeout(annotated.condition(), timeout);
    AnnotateRelockAfterWait();
    return result;
#else
    return mu_.AwaitWithTimeout(cond, timeout);
#endif
  }

 private:
#ifdef METAOPT_HAVE_TSAN
  // absl evaluates a waiter's condition inside its Await and its Unlock,
  // where TSan has been told (MutexPreUnlock) that this thread released the
  // mutex and ignores its memory accesses. Around the evaluation the wrapper
  // tells TSan that the mutex is held, as abseil's own TSan build does, so the
  // condition's reads are checked and ordered like any guarded access.
  struct AnnotatedCondition {
    Mutex* mu;
    const absl::Condition* cond;

    static bool Eval(AnnotatedCondition* self) {
      tsan_annotations::MutexPostUnlock(self->mu, 0);
      tsan_annotations::MutexPreLock(self->mu, 0);
      tsan_annotations::MutexPostLock(self->mu, 0);
      const bool result = self->cond->Eval();
      tsan_annotations::MutexPreUnlock(self->mu, 0);
      return result;
    }
    absl::Condition condition() { return absl::Condition(&Eval, this); }
  };

  // Ends a wait that began with MutexPreUnlock: the mutex is held again.
  void AnnotateRelockAfterWait() {
    tsan_annotations::MutexPostUnlock(this, 0);
    tsan_annotations::MutexPreLock(this, 0);
    tsan_annotations::MutexPostLock(this, 0);
  }
#endif

  absl::Mutex mu_;
};

// Holds `mu` exclusively for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }

  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Holds `mu` shared for its scope.
class ABSL_SCOPED_LOCKABLE ReaderMutexLock {
 public:
  explicit ReaderMutexLock(Mutex* mu) ABSL_SHARED_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->ReaderLock();
  }
  ~ReaderMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->ReaderUnlock(); }

  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// absl::Notification: a one-time event. Thread-safe. Everything a thread did
// before Notify() happens before the return of any wait, or of a
// HasBeenNotified() that returns true.
class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  // REQUIRES: not called before on this object.
  void Notify() {
    tsan_annotations::Release(this);
    notification_.Notify();
  }
  bool HasBeenNotified() const {
    if (!notification_.HasBeenNotified()) return false;
    tsan_annotations::Acquire(this);
    return true;
  }
  void WaitForNotification() const {
    notification_.WaitForNotification();
    tsan_annotations::Acquire(this);
  }
  // Returns whether Notify() was called within `timeout`.
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    if (!notification_.WaitForNotificationWithTimeout(timeout)) return false;
    tsan_annotations::Acquire(this);
    return true;
  }

 private:
  absl::Notification notification_;
};

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_MUTEX_H_
