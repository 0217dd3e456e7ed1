// Test support for PMF: a synthetic low-rank meta-dataset over a finite
// catalogue with meta-features, and a small trained PMF artifact over it.
#ifndef METAOPT_TESTS_TESTUTIL_SYNTHETIC_PMF_H_
#define METAOPT_TESTS_TESTUTIL_SYNTHETIC_PMF_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/meta_dataset/meta_dataset.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::train::testing {

struct SyntheticPmfOptions {
  int entries = 40;  // catalogue size
  int train_tasks = 30;
  int valid_tasks = 6;
  int test_tasks = 6;
  int rank = 2;
  // Fraction of training entries dropped at random.
  double missing = 0.2;
  uint64_t seed = 1;
};

// One stage "model", one algorithm "m", one float "x" in [0, 1]; entry n is
// x = n / (entries - 1). Each entry has a hidden vector z_n ~ N(0, I_rank),
// each task a hidden w_t ~ N(0, I_rank), and
//   y = 0.3 + 0.1 tanh(z_n . w_t) + 0.05 (z_n . w_t)^2 / rank + N(0, 1e-4),
// goal minimize. Meta-features: "w0".."w{rank-1}" = w_t, and "n" = 1000 +
// 500 w_t[0] (a large-magnitude feature, as NumberOfInstances), for every task
// but the last test task. Tasks: ids "t0", "t1", ... in the order train,
// valid, test.
meta::MetaDataset SyntheticPmfDataset(const SyntheticPmfOptions& options = {});

// A MODEL_KIND_PMF artifact trained (Q = 3, 60 epochs) on the train split of
// SyntheticPmfDataset(options), with search space, objective and provenance
// filled, ready for registry::WriteModelVersion.
absl::StatusOr<v1::ModelArtifact> TrainSyntheticPmfArtifact(
    const SyntheticPmfOptions& options = {});

}  // namespace metaopt::train::testing

#endif  // METAOPT_TESTS_TESTUTIL_SYNTHETIC_PMF_H_
