// A 2-stage conditional test problem shared by the policy tests.
#ifndef METAOPT_TESTS_TESTUTIL_CONDITIONAL_PROBLEM_H_
#define METAOPT_TESTS_TESTUTIL_CONDITIONAL_PROBLEM_H_

#include <cmath>
#include <string>

#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy::conditional_test {

inline double Number(const v1::Configuration& c, int stage,
                     const std::string& name) {
  return c.assignments(stage).parameters().at(name).number();
}

// Two stages: pre {none, scale(s in [0.1, 10] log)} then model {linear(a in
// [-2, 2]), tree(depth int 1..20, split categorical)}; minimised.
inline v1::StudySpec ConditionalSpec(v1::AlgorithmKind kind, uint64_t seed) {
  v1::StudySpec spec;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(
      R"pb(
        search_space {
          stages {
            name: "pre"
            algorithms { name: "none" }
            algorithms {
              name: "scale"
              parameters {
                name: "s"
                float_domain { low: 0.1 high: 10 log: true }
              }
            }
          }
          stages {
            name: "model"
            algorithms {
              name: "linear"
              parameters {
                name: "a"
                float_domain { low: -2 high: 2 }
              }
            }
            algorithms {
              name: "tree"
              parameters {
                name: "depth"
                int_domain { low: 1 high: 20 }
              }
              parameters {
                name: "split"
                categorical_domain {
                  values: "gini"
                  values: "entropy"
                  values: "log"
                }
              }
            }
          }
        }
        objective { goal: GOAL_MINIMIZE }
      )pb",
      &spec));
  spec.mutable_algorithm()->set_kind(kind);
  spec.set_seed(seed);
  return spec;
}

// Best: scale with s = 2 and linear with a = 0.7 (value 0).
inline double Conditional(const v1::Configuration& c) {
  double value = 0;
  if (c.assignments(0).algorithm() == "scale") {
    value += std::pow(std::log10(Number(c, 0, "s")) - std::log10(2.0), 2);
  } else {
    value += 0.5;
  }
  if (c.assignments(1).algorithm() == "linear") {
    value += std::pow(Number(c, 1, "a") - 0.7, 2);
  } else {
    const double depth = Number(c, 1, "depth");
    value +=
        0.3 + 0.01 * std::abs(depth - 8) +
        (c.assignments(1).parameters().at("split").category() == "gini" ? 0.0
                                                                        : 0.2);
  }
  return value;
}

}  // namespace metaopt::policy::conditional_test

#endif  // METAOPT_TESTS_TESTUTIL_CONDITIONAL_PROBLEM_H_
