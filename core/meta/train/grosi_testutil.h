// Test support for GROSI: a synthetic meta-dataset whose best configuration
// depends on a meta-feature, and a small GROSI artifact trained on it.
#ifndef METAOPT_CORE_META_TRAIN_GROSI_TESTUTIL_H_
#define METAOPT_CORE_META_TRAIN_GROSI_TESTUTIL_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "core/meta/meta_dataset.h"
#include "core/meta/train/grosi_train.h"
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

}  // namespace metaopt::train::testing

#endif  // METAOPT_CORE_META_TRAIN_GROSI_TESTUTIL_H_
