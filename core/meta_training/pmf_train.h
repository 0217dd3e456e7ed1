// metaopt-train --kind pmf: probabilistic matrix factorisation over the
// catalogue of a meta-dataset ("Probabilistic Matrix Factorization for
// Automated Machine Learning", Fusi et al. 2018;
// core/surrogate/pmf_model.h for the model).
//
//   metaopt-train --kind pmf --data $METAOPT_DATA/oboe --registry models
//       [--name oboe-pmf] [--latent-dim 20] [--epochs 100]
//       [--batch-datasets 50] [--max-pipelines 1000] [--learning-rate 0.01]
//       [--portfolio greedy|average-rank] [--size 16] [--seed 0]
//
// The catalogue is the set of distinct configurations of the training tasks
// (in order of first appearance); Y is catalogue entries x training tasks with
// missing entries. The latents start at the PCA of the mean-imputed Y and are
// trained with the kernel parameters by Adam on the exact marginal likelihood,
// over batches of datasets with at most --max-pipelines entries per dataset
// per step. After every epoch the validation NLL (the marginal NLL of each
// validation task's entries under the frozen model, per observation) picks the
// best checkpoint (without validation tasks: the epoch's mean training NLL).
#ifndef METAOPT_CORE_META_TRAINING_PMF_TRAIN_H_
#define METAOPT_CORE_META_TRAINING_PMF_TRAIN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/meta_dataset/meta_dataset.h"
#include "core/meta_training/train_common.h"
#include "core/surrogate/pmf_model.h"

namespace metaopt::train {

struct PmfTrainOptions {
  int latent_dim = 20;  // Q
  int epochs = 100;
  // Datasets per step (the paper's column batch of 50).
  int batch_datasets = 50;
  // Entries per dataset per step (the authors' N_max = 1000); also caps the
  // entries of a validation task scored.
  int max_pipelines = 1000;
  // Adam, cosine-decayed to a tenth over the run (the paper's alternative
  // configuration: Adam at 1e-2).
  double learning_rate = 1e-2;
  double initial_noise_variance = 0.1;  // w, in standardised units
  uint64_t seed = 0;
};

// One dataset (task): its observed catalogue entries and their targets in
// model units (standardised losses).
struct PmfColumn {
  std::string task_id;
  std::vector<int> entries;
  Eigen::VectorXd targets;
};

// The training problem built from a meta-dataset.
struct PmfProblem {
  // Distinct canonical configurations of the training tasks, first appearance
  // order; row n of the latents belongs to catalogue[n].
  std::vector<v1::Configuration> catalogue;
  absl::flat_hash_map<std::string, int> index_by_key;  // ConfigurationKey
  std::vector<PmfColumn> train;  // One per training task.
  // Validation tasks with at least one catalogue entry (others are dropped).
  std::vector<PmfColumn> valid;
  // Standardisation of the losses (loss = y, or -y for goal maximize) over all
  // training observations.
  double y_mean = 0.0;
  double y_std = 1.0;
};

// Builds the problem. Of a configuration listed twice in a task the first row
// counts. INVALID_ARGUMENT if there are no training observations.
absl::StatusOr<PmfProblem> BuildPmfProblem(
    const meta::MetaDataset& data, const std::vector<const meta::Task*>& train,
    const std::vector<const meta::Task*>& valid);

struct PmfTrainReport {
  int epochs_run = 0;
  int64_t steps = 0;
  // 0: the initialisation was never beaten.
  int best_epoch = 0;
  // Per observation, at the best checkpoint (train: full pass; valid: NaN
  // without validation tasks).
  double train_nll = 0.0;
  double valid_nll = 0.0;
  double initial_train_nll = 0.0;
  double initial_valid_nll = 0.0;
  // Per epoch (index 0: the initialisation): the selection criterion.
  std::vector<double> criterion_curve;
};

// Per-observation NLL of `columns` under `model` (each column capped at
// `max_pipelines` entries: the first ones of a permutation drawn from `seed`).
absl::StatusOr<double> PmfMeanNll(const surrogate::PmfModel& model,
                                  const std::vector<PmfColumn>& columns,
                                  int max_pipelines, uint64_t seed);

// Trains the model (PCA init, stochastic Adam, best checkpoint). `progress`
// may be null. INVALID_ARGUMENT for bad options. Deterministic for a seed.
absl::StatusOr<surrogate::PmfModel> TrainPmfModel(
    const PmfProblem& problem, const PmfTrainOptions& options,
    Progress* progress, PmfTrainReport* report);

// Meta-features and ranks for the warm start, as stored in the artifact:
//   training_features[i]: task id and raw meta-features of training task i
//     (every training task, in training order; the map may be empty);
//   normalization["feature_mean/<name>"], ["feature_std/<name>"]: over the
//     training tasks that have the feature (std with n - 1; 0 when constant);
//   tensor "training_top_entries" [T, depth]: row t lists the catalogue
//     indices of task t's best `depth` entries, best first (ties by index),
//     padded with -1;
//   tensor "mean_ranks" [N]: each entry's normalised rank (rank - 1) /
//     (n_t - 1) in [0, 1] (0 best, ties averaged) averaged over the training
//     tasks that evaluated it.
void AddPmfWarmStartData(const PmfProblem& problem,
                         const std::vector<const meta::Task*>& train, int depth,
                         v1::ModelArtifact* artifact);

// Catalogue indices by increasing mean normalised rank over the training
// tasks (each entry averaged over the tasks it was evaluated on; ties by
// index).
std::vector<int> AverageRankOrder(const PmfProblem& problem);

// Flags: --latent-dim, --epochs, --batch-datasets, --max-pipelines,
// --learning-rate, --warm-start-depth (32), --portfolio greedy|average-rank.
// Artifact: MODEL_KIND_PMF
// with the catalogue, the tensors of surrogate::PmfModel::ToArtifact, the
// warm-start data (AddPmfWarmStartData), the portfolio (greedy: train's
// BuildPortfolio with exact matching; average-rank: the first --size entries
// of AverageRankOrder). Metrics: "train_nll", "valid_nll",
// "initial_train_nll", "initial_valid_nll" (per observation), "best_epoch",
// and the portfolio's "train_regret@k" / "valid_regret@k".
TrainerKind PmfTrainerKind();

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_PMF_TRAIN_H_
