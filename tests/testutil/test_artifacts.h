// Test helpers: a small valid search space and model artifact, and raw version
// writers that bypass validation (to build broken versions).
#ifndef METAOPT_TESTS_TESTUTIL_TEST_ARTIFACTS_H_
#define METAOPT_TESTS_TESTUTIL_TEST_ARTIFACTS_H_

#include <string>

#include "metaopt/v1/model.pb.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::registry::testing {

// Two stages:
//   "preprocessor": "none" (no parameters), "pca" (n_components: int [1, 10])
//   "estimator":    "RF" (n_estimators: int [10, 500], criterion: {"gini",
//   "entropy"}),
//                   "GBT" (learning_rate: float [1e-3, 1] log, max_depth: int
//                   [1, 10])
v1::SearchSpace TestSearchSpace();

// A valid MODEL_KIND_PORTFOLIO artifact over TestSearchSpace(): tensor
// "weights" of shape [2, 3] whose values are all `marker` (so tests can tell
// versions apart), normalization y_mean/y_std, a canonical two-entry portfolio
// and provenance "oboe", split "train", 3 tasks.
v1::ModelArtifact TestArtifact(double marker = 0.0);

// Writes `artifact_bytes` as model.pb and a MANIFEST describing them (correct
// size and SHA-256, kind unset) into `version_dir` (created if needed). No
// validation. Returns false on I/O errors.
bool WriteRawVersion(const std::string& version_dir,
                     const std::string& artifact_bytes);
// As above for a serialized artifact (the MANIFEST's kind is the artifact's).
bool WriteRawVersion(const std::string& version_dir,
                     const v1::ModelArtifact& artifact);

// Writes `contents` to `path`, replacing it. Returns false on I/O errors.
bool WriteFile(const std::string& path, const std::string& contents);

}  // namespace metaopt::registry::testing

#endif  // METAOPT_TESTS_TESTUTIL_TEST_ARTIFACTS_H_
