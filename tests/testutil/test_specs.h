// Study specs and search spaces shared by the tests (unit, integration, fuzz).
#ifndef METAOPT_TESTS_TESTUTIL_TEST_SPECS_H_
#define METAOPT_TESTS_TESTUTIL_TEST_SPECS_H_

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "google/protobuf/text_format.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::testing {

// `text` in protobuf text format as a T. The texts are the tests' own
// constants, so one that does not parse aborts (also outside GoogleTest: the
// fuzz harnesses use these fixtures).
template <typename T>
T ParseTextProto(const std::string& text) {
  T message;
  if (!google::protobuf::TextFormat::ParseFromString(text, &message)) {
    std::fprintf(stderr, "ParseTextProto: not a valid %s:\n%s\n",
                 T::descriptor()->full_name().c_str(), text.c_str());
    std::abort();
  }
  return message;
}

// Two stages with every domain kind: "preprocess" {none, pca(n_components log
// int, whiten cat)}, "model" {svm(C log float, kernel cat of 3), mlp(lr log
// float, layers int, dropout float)}.
inline v1::SearchSpace MixedPipelineSpace() {
  return ParseTextProto<v1::SearchSpace>(R"pb(
    stages {
      name: "preprocess"
      algorithms { name: "none" }
      algorithms {
        name: "pca"
        parameters {
          name: "n_components"
          int_domain { low: 1 high: 8 log: true }
        }
        parameters {
          name: "whiten"
          categorical_domain { values: "yes" values: "no" }
        }
      }
    }
    stages {
      name: "model"
      algorithms {
        name: "svm"
        parameters {
          name: "C"
          float_domain { low: 1e-3 high: 1e3 log: true }
        }
        parameters {
          name: "kernel"
          categorical_domain { values: "linear" values: "rbf" values: "poly" }
        }
      }
      algorithms {
        name: "mlp"
        parameters {
          name: "lr"
          float_domain { low: 1e-5 high: 1 log: true }
        }
        parameters {
          name: "layers"
          int_domain { low: 1 high: 5 }
        }
        parameters {
          name: "dropout"
          float_domain { low: 0 high: 0.5 }
        }
      }
    }
  )pb");
}

// Plain HPO: one stage "train", one algorithm "xgb" (lr log float, depth int,
// booster cat).
inline v1::SearchSpace HpoSpace() {
  return ParseTextProto<v1::SearchSpace>(R"pb(
    stages {
      name: "train"
      algorithms {
        name: "xgb"
        parameters {
          name: "lr"
          float_domain { low: 1e-5 high: 1 log: true }
        }
        parameters {
          name: "depth"
          int_domain { low: 2 high: 10 }
        }
        parameters {
          name: "booster"
          categorical_domain { values: "gbtree" values: "dart" }
        }
      }
    }
  )pb");
}

// A valid HpoSpace configuration (algorithm omitted, as the single-algorithm
// stage allows).
inline v1::Configuration HpoConfig() {
  return ParseTextProto<v1::Configuration>(R"pb(
    assignments {
      stage: "train"
      parameters {
        key: "lr"
        value { number: 0.01 }
      }
      parameters {
        key: "depth"
        value { number: 4 }
      }
      parameters {
        key: "booster"
        value { category: "dart" }
      }
    }
  )pb");
}

// The value of parameter `name` in the first assignment of `config` (inserted
// if absent).
inline v1::ParameterValue& HpoValue(v1::Configuration& config,
                                    const std::string& name) {
  return (*config.mutable_assignments(0)->mutable_parameters())[name];
}

// The first parameter of the first algorithm of the first stage of `space`.
inline v1::Parameter* FirstParameter(v1::SearchSpace& space) {
  return space.mutable_stages(0)->mutable_algorithms(0)->mutable_parameters(0);
}

// Sets two objectives, accuracy (maximised) and fit_seconds (minimised), and
// the constraint memory_mb <= memory_bound_mb on `spec` (its single
// `objective` cleared).
inline void SetAccuracyAndFitSeconds(double memory_bound_mb,
                                     v1::StudySpec* spec) {
  spec->clear_objective();
  spec->clear_objectives();
  spec->clear_constraints();
  v1::Objective* accuracy = spec->add_objectives();
  accuracy->set_name("accuracy");
  accuracy->set_goal(v1::GOAL_MAXIMIZE);
  v1::Objective* seconds = spec->add_objectives();
  seconds->set_name("fit_seconds");
  seconds->set_goal(v1::GOAL_MINIMIZE);
  v1::Constraint* memory = spec->add_constraints();
  memory->set_metric("memory_mb");
  memory->set_sense(v1::CONSTRAINT_SENSE_AT_MOST);
  memory->set_bound(memory_bound_mb);
}

// A two-stage pipeline space: scaler {none, standard}, estimator {svm(C log
// float, kernel cat), knn(n_neighbors int)}.
inline v1::StudySpec PipelineSpec(
    v1::AlgorithmKind kind = v1::ALGORITHM_KIND_RANDOM, uint64_t seed = 7) {
  auto spec = ParseTextProto<v1::StudySpec>(
      R"pb(
        search_space {
          stages {
            name: "scaler"
            algorithms { name: "none" }
            algorithms { name: "standard" }
          }
          stages {
            name: "estimator"
            algorithms {
              name: "svm"
              parameters {
                name: "C"
                float_domain { low: 0.001 high: 1000 log: true }
              }
              parameters {
                name: "kernel"
                categorical_domain { values: "rbf" values: "linear" }
              }
            }
            algorithms {
              name: "knn"
              parameters {
                name: "n_neighbors"
                int_domain { low: 1 high: 50 }
              }
            }
          }
        }
        objective { name: "accuracy" goal: GOAL_MAXIMIZE }
      )pb");
  spec.mutable_algorithm()->set_kind(kind);
  spec.set_seed(seed);
  return spec;
}

// A smooth accuracy (maximised) over PipelineSpec configurations: best with
// the standard scaler and an svm with C = 1.
inline double PipelineAccuracy(const v1::Configuration& config) {
  double value = config.assignments(0).algorithm() == "standard" ? 0.1 : 0.0;
  const v1::Assignment& estimator = config.assignments(1);
  if (estimator.algorithm() == "svm") {
    value +=
        0.8 -
        0.05 * std::abs(std::log10(estimator.parameters().at("C").number()));
  } else {
    value += 0.7 - 0.001 * estimator.parameters().at("n_neighbors").number();
  }
  return value;
}

// A one-stage space with x in [0, 1] and a catalogue of `n` points x = i / (n -
// 1).
inline v1::StudySpec CatalogueSpec(int n, uint64_t seed = 3) {
  auto spec = ParseTextProto<v1::StudySpec>(
      R"pb(
        search_space {
          stages {
            name: "model"
            algorithms {
              name: "f"
              parameters {
                name: "x"
                float_domain { low: 0 high: 1 }
              }
            }
          }
        }
        objective { name: "loss" goal: GOAL_MINIMIZE }
        algorithm { kind: ALGORITHM_KIND_RANDOM }
      )pb");
  for (int i = 0; i < n; ++i) {
    v1::Assignment* a = spec.add_candidates()->add_assignments();
    a->set_stage("model");
    a->set_algorithm("f");
    (*a->mutable_parameters())["x"].set_number(
        n == 1 ? 0.0 : static_cast<double>(i) / (n - 1));
  }
  spec.set_seed(seed);
  return spec;
}

}  // namespace metaopt::testing

#endif  // METAOPT_TESTS_TESTUTIL_TEST_SPECS_H_
