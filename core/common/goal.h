// Comparing objective values under a study's goal.
#ifndef METAOPT_CORE_COMMON_GOAL_H_
#define METAOPT_CORE_COMMON_GOAL_H_

#include "metaopt/v1/study.pb.h"

namespace metaopt {

// Whether `a` is strictly better than `b`: larger under GOAL_MAXIMIZE, smaller
// otherwise.
inline bool Better(double a, double b, v1::Goal goal) {
  return goal == v1::GOAL_MAXIMIZE ? a > b : a < b;
}

}  // namespace metaopt

#endif  // METAOPT_CORE_COMMON_GOAL_H_
