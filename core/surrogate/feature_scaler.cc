#include "core/surrogate/feature_scaler.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace metaopt::surrogate {
namespace {
constexpr char kMeanPrefix[] = "feature_mean/";
constexpr char kStdPrefix[] = "feature_std/";
}  // namespace

absl::StatusOr<FeatureScaler> FeatureScaler::Create(
    std::vector<std::string> names, Eigen::VectorXd means,
    Eigen::VectorXd stds) {
  for (size_t f = 0; f < names.size(); ++f) {
    if (names[f].empty() || (f > 0 && !(names[f - 1] < names[f]))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "meta-feature names must be non-empty, sorted and distinct; name ", f,
          " is \"", names[f], "\""));
    }
  }
  const Eigen::Index n = static_cast<Eigen::Index>(names.size());
  if (means.size() != n || stds.size() != n || !means.allFinite() ||
      !stds.allFinite()) {
    return absl::InvalidArgumentError(
        absl::StrCat("meta-feature statistics: need ", n,
                     " finite means and standard deviations (got ",
                     means.size(), " and ", stds.size(), ")"));
  }
  FeatureScaler scaler;
  scaler.names_ = std::move(names);
  scaler.means_ = std::move(means);
  scaler.stds_ = std::move(stds);
  return scaler;
}

absl::StatusOr<FeatureScaler> FeatureScaler::ReadFrom(
    const google::protobuf::Map<std::string, double>& normalization) {
  // Sorted by name (std::map order).
  std::map<std::string, std::pair<const double*, const double*>> stats;
  for (const auto& [key, value] : normalization) {
    if (absl::StartsWith(key, kMeanPrefix)) {
      stats[key.substr(sizeof(kMeanPrefix) - 1)].first = &value;
    } else if (absl::StartsWith(key, kStdPrefix)) {
      stats[key.substr(sizeof(kStdPrefix) - 1)].second = &value;
    }
  }
  std::vector<std::string> names;
  Eigen::VectorXd means(static_cast<Eigen::Index>(stats.size()));
  Eigen::VectorXd stds(means.size());
  for (const auto& [name, stat] : stats) {
    if (stat.first == nullptr || stat.second == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "artifact.normalization[\"",
          stat.first == nullptr ? kMeanPrefix : kStdPrefix, name,
          "\"]: missing (the other statistic of the feature is present)"));
    }
    const Eigen::Index f = static_cast<Eigen::Index>(names.size());
    means[f] = *stat.first;
    stds[f] = *stat.second;
    names.push_back(name);
  }
  return Create(std::move(names), std::move(means), std::move(stds));
}

void FeatureScaler::WriteTo(
    google::protobuf::Map<std::string, double>* normalization) const {
  for (int f = 0; f < size(); ++f) {
    (*normalization)[kMeanPrefix + names_[f]] = means_[f];
    (*normalization)[kStdPrefix + names_[f]] = stds_[f];
  }
}

}  // namespace metaopt::surrogate
