// metaopt-train --kind output-head: cost-aware transfer. Fits a linear model
// of log(COLUMN) (a further column of evaluations.csv, e.g. oboe's
// `runtime_s` or sklearn-pipelines' `fit_seconds`) on the pipeline embedding
// of the newest version of the DeepPipe model --name, over the training
// tasks' rows, and writes that model with the head added
// (surrogate/output_head.h) as its next version. A study that bound it and
// has COLUMN as a further objective starts from the head's prediction of it.
#ifndef METAOPT_CORE_META_TRAINING_OUTPUT_HEAD_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_OUTPUT_HEAD_TRAIN_H_

#include "core/meta_training/train_common.h"

namespace metaopt::train {

TrainerKind OutputHeadTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_OUTPUT_HEAD_TRAIN_H_
