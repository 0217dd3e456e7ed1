// Standardization of a dataset's named meta-features with the training tasks'
// statistics, shared by the models that condition on the dataset (GROSI,
// task-conditioned DeepPipe). A missing or non-finite feature is imputed by
// its training mean (z = 0, never a silent raw zero) and reported; a feature
// whose training standard deviation is not positive standardizes to 0; every
// z is clipped to [-kClip, kClip] so that one extreme dataset cannot saturate
// a network.
//
// Stored in a model artifact's normalization map as
// "feature_mean/<name>" and "feature_std/<name>" (the names are the keys).
//
// Immutable value; thread-safe.
#ifndef METAOPT_CORE_SURROGATE_FEATURE_SCALER_H_
#define METAOPT_CORE_SURROGATE_FEATURE_SCALER_H_

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/status/statusor.h"
#include "google/protobuf/map.h"

namespace metaopt::surrogate {

class FeatureScaler {
 public:
  static constexpr double kClip = 10.0;

  // No features.
  FeatureScaler() = default;

  // INVALID_ARGUMENT unless the names are non-empty, sorted and distinct and
  // there is one finite mean and standard deviation per name.
  static absl::StatusOr<FeatureScaler> Create(std::vector<std::string> names,
                                              Eigen::VectorXd means,
                                              Eigen::VectorXd stds);

  // The statistics stored by WriteTo (none: no features). INVALID_ARGUMENT
  // naming the key for a mean without a standard deviation or the reverse,
  // or a non-finite value.
  static absl::StatusOr<FeatureScaler> ReadFrom(
      const google::protobuf::Map<std::string, double>& normalization);
  void WriteTo(google::protobuf::Map<std::string, double>* normalization) const;

  int size() const { return static_cast<int>(names_.size()); }
  bool empty() const { return names_.empty(); }
  const std::vector<std::string>& names() const { return names_; }
  const Eigen::VectorXd& means() const { return means_; }
  const Eigen::VectorXd& stds() const { return stds_; }

  // z_f for a raw value of feature f (in range, value finite).
  double StandardizeOne(int f, double value) const {
    if (!(stds_[f] > 0)) return 0.0;
    return std::clamp((value - means_[f]) / stds_[f], -kClip, kClip);
  }

  // z for a dataset's raw meta-features (a map from name to value: std::map,
  // absl::flat_hash_map or google::protobuf::Map). Names the scaler does not
  // know are ignored; missing or non-finite ones are imputed (z = 0) and
  // appended to `*imputed` when it is not null.
  template <typename FeatureMap>
  Eigen::VectorXd Standardize(const FeatureMap& raw,
                              std::vector<std::string>* imputed) const {
    Eigen::VectorXd z = Eigen::VectorXd::Zero(size());
    for (int f = 0; f < size(); ++f) {
      const auto it = raw.find(names_[f]);
      if (it == raw.end() || !std::isfinite(it->second)) {
        if (imputed != nullptr) imputed->push_back(names_[f]);
        continue;
      }
      z[f] = StandardizeOne(f, it->second);
    }
    return z;
  }

 private:
  std::vector<std::string> names_;
  Eigen::VectorXd means_;
  Eigen::VectorXd stds_;
};

}  // namespace metaopt::surrogate

#endif  // METAOPT_CORE_SURROGATE_FEATURE_SCALER_H_
