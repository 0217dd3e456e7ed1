// metaopt-train --kind fsbo: the deep kernel of "Few-Shot Bayesian
// Optimization with Deep Kernel Surrogates" (Wistuba & Grabocka, ICLR 2021)
// meta-trained on the training tasks, with the paper's evolutionary warm
// start as its portfolio, as a MODEL_KIND_FSBO artifact for
// ALGORITHM_KIND_FSBO studies.
//
// It is DeepPipe's meta-training (deeppipe_train.h) with the paper's
// settings: the network is surrogate::FsboArchitecture() (a plain MLP over
// the encoded configuration, d_in -> 128 ReLU -> 128 linear) under FSBO's GP
// (squared-exponential ARD kernel, zero mean, learned noise); each step is one
// Adam step (lr 1e-3, constant) on the marginal likelihood of a batch of 50
// evaluations of one task whose targets are rescaled by the task augmentation
// (y <- (y - l) / (u - l), l < u uniform in the training tasks' [min y,
// max y]); the portfolio is the evolutionary search of sets of I = 5 settings
// (evolutionary_portfolio.h, 100,000 steps). The paper leaves the number of
// iterations open: one epoch here is one step per training task (in a
// shuffled order), and the epoch with the best validation NLL is kept.
#ifndef METAOPT_CORE_META_TRAINING_FSBO_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_FSBO_TRAIN_H_

#include "core/meta_training/deeppipe_train.h"
#include "core/meta_training/portfolio_train.h"
#include "core/meta_training/train_common.h"

namespace metaopt::train {

// The paper's meta-training settings (above), 1,000 epochs.
DeepPipeTrainOptions FsboTrainOptions();

// The paper's warm-start search: evolutionary (its size is --size, 5 by
// default for this kind).
PortfolioSearchFlags FsboWarmStartFlags();

// Flags: the loop's (DeepPipeLoopFlags, FSBO's defaults) and the portfolio
// search's (PortfolioSearchFlags, evolutionary by default); --size defaults
// to 5. The architecture is fixed (the artifact's int_options record it, its
// kind MODEL_KIND_FSBO records the GP).
TrainerKind FsboTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_FSBO_TRAIN_H_
