// Study specs shared by the integration tests.
#ifndef METAOPT_TESTS_INTEGRATION_TEST_SPECS_H_
#define METAOPT_TESTS_INTEGRATION_TEST_SPECS_H_

#include <string>

#include "google/protobuf/text_format.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::testing {

// A two-stage pipeline space: scaler {none, standard}, estimator {svm(C log
// float, kernel cat), knn(n_neighbors int)}.
inline v1::StudySpec PipelineSpec(
    v1::AlgorithmKind kind = v1::ALGORITHM_KIND_RANDOM, uint64_t seed = 7) {
  v1::StudySpec spec;
  google::protobuf::TextFormat::ParseFromString(
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
      )pb",
      &spec);
  spec.mutable_algorithm()->set_kind(kind);
  spec.set_seed(seed);
  return spec;
}

// A one-stage space with x in [0, 1] and a catalogue of `n` points x = i / (n -
// 1).
inline v1::StudySpec CatalogueSpec(int n, uint64_t seed = 3) {
  v1::StudySpec spec;
  google::protobuf::TextFormat::ParseFromString(
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
      )pb",
      &spec);
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

#endif  // METAOPT_TESTS_INTEGRATION_TEST_SPECS_H_
