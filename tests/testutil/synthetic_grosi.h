// Test support for GROSI: a synthetic meta-dataset whose best configuration
// depends on a meta-feature, and a small GROSI artifact trained on it.
#ifndef METAOPT_TESTS_TESTUTIL_SYNTHETIC_GROSI_H_
#define METAOPT_TESTS_TESTUTIL_SYNTHETIC_GROSI_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/grosi_train.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::train::testing {

// Over metaopt::testing::CatalogueSpec's space (one float x in [0, 1]), every
// task evaluates the 21 points x = i / 20 with the loss (x - c_t)^2 (goal
// minimize), c_t = 0.15 + noise for family "left" (meta-feature f near -1)
// and 0.85 + noise for family "right" (f near +1). Meta-feature g is noise;
// h is present on every other task only. Tasks alternate families; the first
// `train` are split "train", the next `valid` "valid", the rest "test".
meta::MetaDataset TwoFamilyDataset(int train, int valid, int test,
                                   uint64_t seed = 7);

// Small, fast options for TwoFamilyDataset.
GrosiTrainOptions SmallGrosiOptions();

// A MODEL_KIND_GROSI artifact trained with SmallGrosiOptions on
// TwoFamilyDataset(16, 4, 0), with format version, objective, a portfolio
// and provenance, ready for registry::WriteModelVersion.
absl::StatusOr<v1::ModelArtifact> TwoFamilyGrosiArtifact();

// Raw samples of TwoFamilyDataset's tasks that tell the families apart only
// through the joint distribution of (feature, target) pairs: 40 rows x 3
// columns x 2 one-hot classes; in a "right" task the features follow the
// class (x = +-1 + noise), in a "left" task they are noise, with the same
// marginal scale.
std::map<std::string, surrogate::RawSample> TwoFamilySamples(
    const meta::MetaDataset& data, uint64_t seed = 11);

// `raw` as a v1::DatasetSample (numeric columns).
v1::DatasetSample SampleProto(const surrogate::RawSample& raw);

// SmallGrosiOptions with a small Dataset2Vec extractor over `samples`
// (without engineered meta-features).
GrosiTrainOptions SmallD2vOptions(
    std::map<std::string, surrogate::RawSample> samples);

// A MODEL_KIND_GROSI artifact with a Dataset2Vec extractor trained with
// SmallD2vOptions on TwoFamilyDataset(16, 4, 0) and its TwoFamilySamples.
absl::StatusOr<v1::ModelArtifact> TwoFamilyD2vArtifact();

}  // namespace metaopt::train::testing

#endif  // METAOPT_TESTS_TESTUTIL_SYNTHETIC_GROSI_H_
