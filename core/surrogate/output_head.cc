#include "core/surrogate/output_head.h"

#include <cmath>
#include <map>
#include <set>
#include <string>
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
  std::set<std::string> metrics;  // in name order
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
    metrics.insert(rest.substr(0, slash));
  }
  METAOPT_ASSIGN_OR_RETURN(nn::TensorMap tensors,
                           nn::IndexTensors(artifact.tensors()));
  std::vector<OutputHead> heads;
  for (const std::string& metric : metrics) {
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

namespace {

// `X` with each group's column means taken out (rows of one group share a
// label in `groups`; empty: one group).
Eigen::MatrixXd CentredWithinGroups(const Eigen::MatrixXd& X,
                                    const std::vector<int>& groups) {
  std::map<int, std::pair<Eigen::RowVectorXd, int>> sums;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const int g = groups.empty() ? 0 : groups[i];
    auto [it, added] = sums.try_emplace(
        g, Eigen::RowVectorXd::Zero(X.cols()), 0);
    it->second.first += X.row(i);
    ++it->second.second;
  }
  Eigen::MatrixXd out = X;
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    const auto& [sum, count] = sums.at(groups.empty() ? 0 : groups[i]);
    out.row(i) -= sum / count;
  }
  return out;
}

absl::Status CheckRows(const std::string& metric, const Eigen::MatrixXd& Z,
                       const Eigen::VectorXd& values,
                       const std::vector<int>& groups) {
  if (Z.rows() != values.size() || Z.rows() < 2 ||
      (!groups.empty() && static_cast<Eigen::Index>(groups.size()) != Z.rows())) {
    return absl::InvalidArgumentError(
        absl::StrCat("output head \"", metric, "\": ", Z.rows(),
                     " embeddings, ", values.size(), " values and ",
                     groups.size(), " groups; at least 2 rows, aligned"));
  }
  for (Eigen::Index i = 0; i < values.size(); ++i) {
    if (!(values[i] > 0) || !std::isfinite(values[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat("output head \"", metric, "\": value ", values[i],
                       " at row ", i, " is not positive and finite"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<OutputHead> FitOutputHead(std::string metric,
                                         const Eigen::MatrixXd& Z,
                                         const Eigen::VectorXd& values,
                                         double lambda,
                                         const std::vector<int>& groups) {
  METAOPT_RETURN_IF_ERROR(CheckRows(metric, Z, values, groups));
  if (!(lambda >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output head \"", metric, "\": lambda ", lambda, " is negative"));
  }
  const Eigen::MatrixXd logs = values.array().log().matrix();
  const Eigen::MatrixXd Zc = CentredWithinGroups(Z, groups);
  const Eigen::VectorXd yc = CentredWithinGroups(logs, groups).col(0);
  Eigen::MatrixXd gram = Zc.transpose() * Zc;
  gram.diagonal().array() += lambda + 1e-9 * (1.0 + gram.diagonal().maxCoeff());
  OutputHead head;
  head.metric = std::move(metric);
  head.weight = gram.ldlt().solve(Zc.transpose() * yc);
  head.bias = logs.mean() - Z.colwise().mean().dot(head.weight);
  return head;
}

absl::StatusOr<double> WithinGroupLogRmse(const OutputHead* head,
                                          const Eigen::MatrixXd& Z,
                                          const Eigen::VectorXd& values,
                                          const std::vector<int>& groups) {
  const std::string metric = head == nullptr ? "constant" : head->metric;
  METAOPT_RETURN_IF_ERROR(CheckRows(metric, Z, values, groups));
  Eigen::MatrixXd error = values.array().log().matrix();
  if (head != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd predicted, head->LogMean(Z));
    error.col(0) -= predicted;
  }
  const Eigen::MatrixXd centred = CentredWithinGroups(error, groups);
  return std::sqrt(centred.col(0).squaredNorm() /
                   static_cast<double>(centred.rows()));
}

}  // namespace metaopt::surrogate
