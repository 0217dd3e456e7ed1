#include "core/surrogate/output_head.h"

#include <cmath>
#include <map>
#include <utility>

#include "Eigen/Cholesky"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/nn/tensor_io.h"

namespace metaopt::surrogate {
namespace {

std::string TensorName(const std::string& metric, absl::string_view part) {
  return absl::StrCat(kOutputHeadPrefix, metric, "/", part);
}

}  // namespace

absl::StatusOr<Eigen::VectorXd> OutputHead::LogMean(
    const Eigen::MatrixXd& Z) const {
  if (Z.cols() != weight.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("output head \"", metric, "\": embeddings of width ",
                     Z.cols(), ", the head reads ", weight.size()));
  }
  return (Z * weight).array() + bias;
}

std::vector<v1::Tensor> OutputHeadTensors(const OutputHead& head) {
  Eigen::VectorXd bias(1);
  bias[0] = head.bias;
  return {nn::MakeTensor(TensorName(head.metric, "weight"),
                         {static_cast<int64_t>(head.weight.size())},
                         head.weight),
          nn::MakeTensor(TensorName(head.metric, "bias"), {1}, bias)};
}

absl::StatusOr<std::vector<OutputHead>> ReadOutputHeads(
    const v1::ModelArtifact& artifact, int embedding_dim) {
  std::map<std::string, int> parts;  // metric -> tensors seen
  for (const v1::Tensor& t : artifact.tensors()) {
    if (!absl::StartsWith(t.name(), kOutputHeadPrefix)) continue;
    const std::string rest(t.name().substr(kOutputHeadPrefix.size()));
    const size_t slash = rest.rfind('/');
    const std::string part =
        slash == std::string::npos ? "" : rest.substr(slash + 1);
    if (slash == std::string::npos || slash == 0 ||
        (part != "weight" && part != "bias")) {
      return absl::InvalidArgumentError(
          absl::StrCat("artifact.tensors: \"", t.name(),
                       "\" is not output_head/<metric>/{weight,bias}"));
    }
    ++parts[rest.substr(0, slash)];
  }
  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  std::vector<OutputHead> heads;
  for (const auto& [metric, count] : parts) {
    OutputHead head;
    head.metric = metric;
    METAOPT_ASSIGN_OR_RETURN(
        head.weight,
        nn::ReadTensor(tensors, TensorName(metric, "weight"), {embedding_dim}));
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd bias,
        nn::ReadTensor(tensors, TensorName(metric, "bias"), {1}));
    head.bias = bias[0];
    heads.push_back(std::move(head));
  }
  return heads;
}

absl::StatusOr<OutputHead> FitOutputHead(std::string metric,
                                         const Eigen::MatrixXd& Z,
                                         const Eigen::VectorXd& values,
                                         double lambda) {
  if (Z.rows() != values.size() || Z.rows() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("output head \"", metric, "\": ", Z.rows(),
                     " embeddings and ", values.size(),
                     " values; at least 2 of each, aligned"));
  }
  if (!(lambda >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output head \"", metric, "\": lambda ", lambda, " is negative"));
  }
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0) || !std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("output head \"", metric, "\": value ", values[i],
                       " at row ", i, " is not positive and finite"));
    }
  }
  const Eigen::Index z = Z.cols();
  Eigen::MatrixXd A(Z.rows(), z + 1);
  A << Z, Eigen::VectorXd::Ones(Z.rows());
  const Eigen::VectorXd y = values.array().log().matrix();
  Eigen::MatrixXd gram = A.transpose() * A;
  gram.diagonal().head(z).array() += lambda;
  gram.diagonal()[z] += 1e-9 * (1.0 + gram(z, z));  // keeps it definite
  const Eigen::VectorXd solution = gram.ldlt().solve(A.transpose() * y);
  OutputHead head;
  head.metric = std::move(metric);
  head.weight = solution.head(z);
  head.bias = solution[z];
  return head;
}

}  // namespace metaopt::surrogate
