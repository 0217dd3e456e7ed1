// Cost-aware transfer: a linear model of log(metric) on a DeepPipe model's
// pipeline embedding, fitted on a meta-dataset's further column (a run time,
// say) across its training tasks (metaopt-train --kind output-head). A study
// with that metric as a further objective starts from its prediction: the
// Pareto step's GP of the metric models the residuals (pareto_step.h).
//
// Stored in the DeepPipe artifact beside the network as tensors
// "output_head/<metric>/weight" (shape {embedding}) and
// "output_head/<metric>/bias" (shape {1}).
//
// A plain value; thread-compatible.
#ifndef METAOPT_CORE_SURROGATE_OUTPUT_HEAD_H_
#define METAOPT_CORE_SURROGATE_OUTPUT_HEAD_H_

#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "metaopt/v1/model.pb.h"

namespace metaopt::surrogate {

inline constexpr absl::string_view kOutputHeadPrefix = "output_head/";

struct OutputHead {
  std::string metric;
  Eigen::VectorXd weight;  // one per embedding dimension
  double bias = 0;

  // log(metric) predicted at each row of the embeddings Z; INVALID_ARGUMENT
  // if Z's width is not weight's size.
  absl::StatusOr<Eigen::VectorXd> LogMean(const Eigen::MatrixXd& Z) const;
};

// The head's two tensors.
std::vector<v1::Tensor> OutputHeadTensors(const OutputHead& head);

// The heads `artifact` carries, by metric in name order; INVALID_ARGUMENT
// naming the tensor when one is misshapen, non-finite or lacks its pair.
absl::StatusOr<std::vector<OutputHead>> ReadOutputHeads(
    const v1::ModelArtifact& artifact, int embedding_dim);

// Ridge regression of log(values) on Z within groups (the tasks a row comes
// from; `groups` empty: one group): each group's mean is taken out of its
// rows' log values and embeddings, so the weights explain how the metric
// varies across configurations of one task, not how tasks differ (a study's
// GP learns its own level), minimising |centred log v - centred Z w|^2 +
// lambda |w|^2; the bias is then the mean log value less the mean
// embedding's prediction. INVALID_ARGUMENT for a non-positive value,
// mismatched sizes, fewer rows than 2, or a negative lambda.
absl::StatusOr<OutputHead> FitOutputHead(std::string metric,
                                         const Eigen::MatrixXd& Z,
                                         const Eigen::VectorXd& values,
                                         double lambda,
                                         const std::vector<int>& groups = {});

// The root mean squared error of head's log predictions on rows (Z, values)
// after each group's mean error is taken out (what a study's level leaves);
// with `head` null, of a constant per group (the spread within groups).
absl::StatusOr<double> WithinGroupLogRmse(const OutputHead* head,
                                          const Eigen::MatrixXd& Z,
                                          const Eigen::VectorXd& values,
                                          const std::vector<int>& groups);

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_OUTPUT_HEAD_H_
