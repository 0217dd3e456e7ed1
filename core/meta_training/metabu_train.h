// metaopt-train --kind metabu: learns a task-aware zero-shot design with
// Metabu (core/meta_training/metabu.h) and publishes it as a new version of an
// existing model (--name), whose other contents it keeps. A study bound to
// that version with dataset features then starts from the best configurations
// of the archived tasks nearest to its dataset instead of the fixed
// portfolio (docs/algorithms.md, "Task-aware initial design").
//
// The map is trained on the training split; the validation split chooses
// between the Metabu map and plain nearest neighbours on standardized
// meta-features (--design auto) by the regret of the design on the
// validation tasks, and then joins the archive.
#ifndef METAOPT_CORE_META_TRAINING_METABU_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_METABU_TRAIN_H_

#include "core/meta_training/train_common.h"

namespace metaopt::train {

TrainerKind MetabuTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_METABU_TRAIN_H_
