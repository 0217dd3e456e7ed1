// metaopt-train --kind portfolio: a MODEL_KIND_PORTFOLIO artifact holding the
// search space, the objective and a greedy warm-start portfolio
// (portfolio.h) with its regret curves on the training and validation tasks.
#ifndef METAOPT_CORE_META_TRAIN_PORTFOLIO_TRAIN_H_
#define METAOPT_CORE_META_TRAIN_PORTFOLIO_TRAIN_H_

#include "core/meta/train/train_common.h"

namespace metaopt::train {

// Flags: --match auto|exact|nearest, --candidates-per-task N (see
// PortfolioOptions). Metrics: "train_regret@k" and "valid_regret@k" for
// k = 1..K (the mean normalised regret of the first k picks; valid_* only
// when the validation split has tasks). int_options: "candidates",
// "nearest_match" (1 when configurations were matched by nearest neighbour).
TrainerKind PortfolioTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAIN_PORTFOLIO_TRAIN_H_
