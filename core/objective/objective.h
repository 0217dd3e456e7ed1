// What a study optimizes: its goal, the value a model minimises for a trial,
// and the best of the trials. The one place a study's goal is applied.
// Pure functions and a small value type: safe from any thread.
#ifndef METAOPT_CORE_OBJECTIVE_OBJECTIVE_H_
#define METAOPT_CORE_OBJECTIVE_OBJECTIVE_H_

#include "metaopt/v1/study.pb.h"

namespace metaopt::objective {

// Whether `a` is strictly better than `b`: larger under GOAL_MAXIMIZE, smaller
// otherwise.
inline bool Better(double a, double b, v1::Goal goal) {
  return goal == v1::GOAL_MAXIMIZE ? a > b : a < b;
}

// The value to minimise for an observed `value`: negated under GOAL_MAXIMIZE,
// unchanged otherwise (so smaller is better whatever the goal).
inline double Minimized(double value, v1::Goal goal) {
  return goal == v1::GOAL_MAXIMIZE ? -value : value;
}

// The best of values offered one at a time: the first value, then each
// strictly better one (of equal values the first offered stays best).
class Best {
 public:
  explicit Best(v1::Goal goal) : goal_(goal) {}

  // Whether `value` becomes the best so far.
  bool Offer(double value) {
    if (any_ && !Better(value, value_, goal_)) return false;
    value_ = value;
    any_ = true;
    return true;
  }

  bool any() const { return any_; }
  // The best value offered; 0 before any.
  double value() const { return value_; }

 private:
  v1::Goal goal_;
  bool any_ = false;
  double value_ = 0;
};

}  // namespace metaopt::objective

#endif  // METAOPT_CORE_OBJECTIVE_OBJECTIVE_H_
