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

// Ridge regression of log(values) on [Z, 1] (the bias not penalised):
// weight and bias minimise |log v - Z w - b|^2 + lambda |w|^2.
// INVALID_ARGUMENT for a non-positive value, mismatched sizes, fewer rows
// than 2, or a negative lambda.
absl::StatusOr<OutputHead> FitOutputHead(std::string metric,
                                         const Eigen::MatrixXd& Z,
                                         const Eigen::VectorXd& values,
                                         double lambda);

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_OUTPUT_HEAD_H_
