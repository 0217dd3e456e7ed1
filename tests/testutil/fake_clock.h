// A settable clock for StudyEngine tests (EngineOptions::clock).
#ifndef METAOPT_TESTS_TESTUTIL_FAKE_CLOCK_H_
#define METAOPT_TESTS_TESTUTIL_FAKE_CLOCK_H_

#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "core/common/mutex.h"

namespace metaopt::study {

// Thread-safe. Every read returns the current time and then moves it on by
// `step` (zero unless set), so that a test can make each timed piece of work
// appear to take `step`.
class FakeClock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000))
      : now_(start) {}

  absl::Time Read() {
    MutexLock lock(&mu_);
    const absl::Time t = now_;
    now_ += step_;
    return t;
  }
  // The current time without advancing it.
  absl::Time Peek() {
    MutexLock lock(&mu_);
    return now_;
  }
  void Advance(absl::Duration d) {
    MutexLock lock(&mu_);
    now_ += d;
  }
  void SetStep(absl::Duration step) {
    MutexLock lock(&mu_);
    step_ = step;
  }

  // For EngineOptions::clock; `clock` must outlive its use.
  static std::function<absl::Time()> Source(FakeClock* clock) {
    return [clock] { return clock->Read(); };
  }

 private:
  Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  absl::Duration step_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace metaopt::study

#endif  // METAOPT_TESTS_TESTUTIL_FAKE_CLOCK_H_
