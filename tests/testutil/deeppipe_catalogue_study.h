// Test helpers of the DeepPipe policy tests: a two-stage catalogue study, its
// objective, and a "meta-learned" registry model over it.
#ifndef METAOPT_TESTS_TESTUTIL_DEEPPIPE_CATALOGUE_STUDY_H_
#define METAOPT_TESTS_TESTUTIL_DEEPPIPE_CATALOGUE_STUDY_H_

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"
#include "core/surrogate/deeppipe_model.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::policy::deeppipe_test {

// Two stages over a 60-entry catalogue.
inline v1::StudySpec CatalogueSpec() {
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
            name: "model"
            algorithms {
              name: "svm"
              parameters {
                name: "C"
                float_domain { low: 0.01 high: 100 log: true }
              }
            }
            algorithms {
              name: "knn"
              parameters {
                name: "k"
                int_domain { low: 1 high: 30 }
              }
            }
          }
        }
        objective { goal: GOAL_MINIMIZE }
        algorithm { kind: ALGORITHM_KIND_DEEPPIPE }
        seed: 3
      )pb",
      &spec);
  auto space = space::SearchSpace::Create(spec.search_space());
  space::Rng rng(1);
  absl::flat_hash_set<std::string> keys;
  while (spec.candidates_size() < 60) {
    v1::Configuration c = space->Sample(rng);
    if (keys.insert(space::ConfigurationKey(c)).second) {
      *spec.add_candidates() = c;
    }
  }
  return spec;
}

inline double Objective(const v1::Configuration& c) {
  double v = c.assignments(0).algorithm() == "standard" ? 0.0 : 0.3;
  const auto& m = c.assignments(1);
  if (m.algorithm() == "svm") {
    v += std::pow(std::log10(m.parameters().at("C").number()) - 0.5, 2);
  } else {
    v += 0.5 + 0.01 * m.parameters().at("k").number();
  }
  return v;
}

inline v1::Trial Completed(int64_t id, const v1::Configuration& c) {
  v1::Trial t;
  t.set_id(id);
  *t.mutable_configuration() = c;
  t.set_state(v1::TRIAL_STATE_COMPLETED);
  t.set_value(Objective(c));
  return t;
}

// A "meta-learned" registry model: a seeded network with a portfolio of the
// first three catalogue entries; task-conditioned on `task_features` when
// given (with a non-zero mean head).
inline std::shared_ptr<const registry::LoadedModel> MetaModel(
    const v1::StudySpec& spec,
    surrogate::FeatureScaler task_features = surrogate::FeatureScaler(),
    const surrogate::DeepPipeArchitecture& architecture =
        surrogate::DeepPipeArchitecture()) {
  auto network = surrogate::DeepPipeModel::Create(
      spec.search_space(), architecture, 11, std::move(task_features));
  if (network.ok() && network->conditioned()) {
    Eigen::VectorXd params = network->parameters();
    const int z = network->embedding_dim();
    // A mean head that dominates the posterior (a strong meta-learned prior).
    for (int i = 0; i < z; ++i) {
      params[network->num_network_parameters() - z + i] = i % 2 ? 40.0 : -40.0;
    }
    EXPECT_TRUE(network->set_parameters(params).ok());
  }
  EXPECT_TRUE(network.ok()) << network.status();
  v1::ModelArtifact artifact;
  artifact.set_format_version(1);
  *artifact.mutable_search_space() = spec.search_space();
  network->ToArtifact(&artifact);
  for (int i = 0; i < 3; ++i) {
    if (i < spec.candidates_size())
      *artifact.add_portfolio() = spec.candidates(i);
  }
  auto space = space::SearchSpace::Create(spec.search_space());
  return registry::LoadedModel::Create("dp", 1, artifact, v1::ModelManifest(),
                                       *std::move(space), absl::UnixEpoch())
      .value();
}

}  // namespace metaopt::policy::deeppipe_test

#endif  // METAOPT_TESTS_TESTUTIL_DEEPPIPE_CATALOGUE_STUDY_H_
