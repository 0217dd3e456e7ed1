#include "core/policy/mosaic_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "core/common/status_macros.h"
#include "core/objective/objective.h"
#include "core/objective/study_objectives.h"

namespace metaopt::policy {
namespace {

bool IsPrefix(const MctsPath& prefix, const MctsPath& structure) {
  return std::equal(prefix.begin(), prefix.end(), structure.begin());
}

}  // namespace

MosaicSearch::MosaicSearch(const MosaicShared& shared, const StudyView& study,
                           space::Rng& rng,
                           const std::vector<std::optional<double>>* targets)
    : shared_(shared), spec_(*study.spec), rng_(rng), held_(study) {
  const std::vector<v1::Trial>& trials = *study.trials;
  // The value to minimise of trials[i], if it is an observation that has one.
  auto target = [&](size_t i) -> std::optional<double> {
    if (!IsObservation(trials[i])) return std::nullopt;
    if (targets != nullptr) return (*targets)[i];
    return objective::Minimized(trials[i].value(), shared.goal);
  };
  std::vector<double> ys;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (std::optional<double> y = target(i); y.has_value()) {
      completed_.push_back(trials[i].configuration());
      feasible_.push_back(objective::StudyObjectives::Feasible(trials[i]));
      ys.push_back(*y);
    }
  }
  y_ = Eigen::Map<const Eigen::VectorXd>(ys.data(), ys.size());
  sorted_ = ys;
  std::sort(sorted_.begin(), sorted_.end());
  targets_ = y_;
  if (!ys.empty()) {
    best_ = y_.minCoeff();
    worst_ = y_.maxCoeff();
    scale_ = worst_ > best_ ? worst_ - best_ : 1.0;
    if (shared.options.rank_scale) {
      for (Eigen::Index i = 0; i < y_.size(); ++i)
        targets_[i] = Quantile(y_[i]);
    }
    best_target_ = targets_.minCoeff();
  }
  acquisition_ =
      std::make_unique<acquisition::LogExpectedImprovementFunction>(
          best_target_);
  for (size_t i = 0; i < trials.size(); ++i) {
    const v1::Trial& trial = trials[i];
    if (!HoldsConfiguration(trial.state())) continue;
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
      pending_.push_back(trial.configuration());
    }
    std::optional<double> reward;
    if (std::optional<double> y = target(i); y.has_value()) {
      // An observation that violates a constraint rewards its path as a
      // failure does.
      reward = objective::StudyObjectives::Feasible(trial) ? Reward(*y) : 0.0;
    } else if (trial.state() != v1::TRIAL_STATE_ACTIVE) {
      reward = 0.0;  // failed or infeasible (or completed without a value)
    }
    Visit(trial.configuration(), reward);
  }
  if (shared.catalogue != nullptr) {
    for (size_t i = 0; i < shared.catalogue->keys.size(); ++i) {
      if (held_.contains(shared.catalogue->keys[i])) continue;
      untried_.push_back(static_cast<int>(i));
      const MctsPath& structure = shared.catalogue_structure[i];
      for (size_t k = 0; k <= structure.size(); ++k) {
        ++untried_below_[MctsPath(structure.begin(), structure.begin() + k)];
      }
    }
  }
}

absl::Status MosaicSearch::FitSurrogate() {
  Eigen::MatrixXd X = shared_.surrogate_encoder().EncodeBatch(completed_);
  METAOPT_ASSIGN_OR_RETURN(model_, shared_.fitter(X, targets_, rng_()));
  return absl::OkStatus();
}

void MosaicSearch::SetConstraints(
    std::vector<acquisition::ModeledConstraint> constraints) {
  std::vector<std::vector<double>> front;
  for (Eigen::Index i = 0; i < targets_.size(); ++i) {
    if (!feasible_[i]) continue;
    if (front.empty()) front.push_back({targets_[i]});
    front[0][0] = std::min(front[0][0], targets_[i]);
  }
  acquisition_ = std::make_unique<acquisition::ParetoAcquisition>(
      std::vector<std::shared_ptr<const surrogate::Surrogate>>{},
      std::move(constraints), std::move(front),
      std::vector<double>{std::numeric_limits<double>::infinity()});
}

void MosaicSearch::Visit(const v1::Configuration& c,
                         std::optional<double> reward) {
  const MctsPath structure = shared_.Structure(c);
  for (size_t k = 0; k <= structure.size(); ++k) {
    NodeStats& s = stats_[MctsPath(structure.begin(), structure.begin() + k)];
    ++s.visits;
    if (reward.has_value()) s.rewards.push_back(*reward);
  }
}

void MosaicSearch::AddPick(const v1::Configuration& pick) {
  held_.Add({pick});
  pending_.push_back(pick);
  Visit(pick, std::nullopt);
  if (shared_.catalogue == nullptr) return;
  const std::string key = space::ConfigurationKey(pick);
  auto row = std::find_if(untried_.begin(), untried_.end(), [&](int i) {
    return shared_.catalogue->keys[i] == key;
  });
  if (row == untried_.end()) return;
  const MctsPath& structure = shared_.catalogue_structure[*row];
  for (size_t k = 0; k <= structure.size(); ++k) {
    --untried_below_[MctsPath(structure.begin(), structure.begin() + k)];
  }
  untried_.erase(row);
}

std::vector<int> MosaicSearch::ValidActions(const MctsPath& path) {
  std::vector<int> valid;
  const int actions = shared_.Actions(static_cast<int>(path.size()));
  MctsPath child = path;
  child.push_back(0);
  for (int a = 0; a < actions; ++a) {
    child.back() = a;
    if (shared_.catalogue == nullptr) {
      valid.push_back(a);
    } else if (auto it = untried_below_.find(child);
               it != untried_below_.end() && it->second > 0) {
      valid.push_back(a);
    }
  }
  return valid;
}

int64_t MosaicSearch::Visits(const MctsPath& path) {
  auto it = stats_.find(path);
  return it == stats_.end() ? 0 : it->second.visits;
}

std::optional<double> MosaicSearch::Value(const MctsPath& path) {
  auto it = stats_.find(path);
  if (it == stats_.end() || it->second.rewards.empty()) return std::nullopt;
  return Median(it->second.rewards);
}

double MosaicSearch::Estimate(const MctsPath& path) {
  auto it = estimates_.find(path);
  if (it != estimates_.end()) return it->second;
  const int n = shared_.options.prior_samples;
  Eigen::MatrixXd X;
  if (shared_.catalogue == nullptr) {
    std::vector<v1::Configuration> samples;
    samples.reserve(n);
    for (int i = 0; i < n; ++i) {
      samples.push_back(shared_.SampleCompletion(path, rng_));
    }
    X = shared_.surrogate_encoder().EncodeBatch(samples);
  } else {
    std::vector<int> rows = CompatibleUntried(path);
    Subsample(rows, n);
    X = Rows(rows);
  }
  double estimate = 0;
  if (X.rows() > 0) {
    absl::StatusOr<gp::Prediction> p = model_->Predict(X);
    if (p.ok()) estimate = RewardOfMean(p->mean.mean());
  }
  estimates_[path] = estimate;
  return estimate;
}

absl::StatusOr<std::optional<v1::Configuration>> MosaicSearch::Playout(
    const MctsPath& path) {
  // Pending trials and this call's picks as fantasies.
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* model = model_.get();
  if (!pending_.empty()) {
    METAOPT_ASSIGN_OR_RETURN(
        fantasised, model_->WithFantasies(
                        shared_.surrogate_encoder().EncodeBatch(pending_)));
    model = fantasised.get();
  }
  // The local search starts from the best evaluated configuration below
  // `path`, or from its default completion.
  const v1::Configuration* incumbent = nullptr;
  double incumbent_y = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < completed_.size(); ++i) {
    if (y_[i] < incumbent_y &&
        IsPrefix(path, shared_.Structure(completed_[i]))) {
      incumbent_y = y_[i];
      incumbent = &completed_[i];
    }
  }
  const v1::Configuration start =
      incumbent != nullptr ? *incumbent : shared_.DefaultCompletion(path);
  auto is_held = [this](const std::string& key) { return held_.contains(key); };
  if (shared_.catalogue != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<int> picks,
        acquisition::MaximizeOverCatalogue(
            *model, *shared_.surrogate_catalogue, PlayoutRows(path, start),
            is_held, *acquisition_, 1, acquisition::Ties::kLowerMean));
    if (picks.empty()) return std::nullopt;
    return spec_.candidates(picks[0]);
  }
  // Strategy C: n_r draws of D(X(path)) and a hill climb over one-exchange
  // neighbours that keep the structure of `path`.
  acquisition::SearchOptions options;
  options.random_samples = shared_.options.playout_samples;
  options.sample = [&](space::Rng& rng) {
    return shared_.SampleCompletion(path, rng);
  };
  options.incumbents = 1;
  options.neighbors = [&](const v1::Configuration& c, space::Rng& rng) {
    return shared_.Neighbors(c, path, rng);
  };
  options.incumbent_steps = shared_.options.local_search_steps;
  options.refine_top = 0;
  options.ties = acquisition::Ties::kLowerMean;
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<v1::Configuration> picks,
      acquisition::MaximizeOverSpace(*model, shared_.space,
                                     shared_.surrogate_encoder(), is_held,
                                     *acquisition_, {start}, 1, options, rng_));
  if (picks.empty()) return std::nullopt;
  return std::move(picks[0]);
}

double MosaicSearch::Quantile(double y) const {
  const double n = static_cast<double>(sorted_.size());
  if (n < 2) return 0.5;
  const auto lower = std::lower_bound(sorted_.begin(), sorted_.end(), y);
  const auto upper = std::upper_bound(sorted_.begin(), sorted_.end(), y);
  const double less = static_cast<double>(lower - sorted_.begin());
  const double equal = static_cast<double>(upper - lower);
  return (less + std::max(0.0, equal - 1) / 2) / (n - 1);
}

double MosaicSearch::Reward(double y) const {
  if (shared_.options.rank_scale) return 1.0 - Quantile(y);
  if (!(worst_ > best_)) return 0.5;
  return (worst_ - y) / scale_;
}

double MosaicSearch::RewardOfMean(double mean) const {
  if (shared_.options.rank_scale) return 1.0 - mean;
  return (worst_ - mean) / scale_;
}

std::vector<int> MosaicSearch::CompatibleUntried(const MctsPath& path) const {
  std::vector<int> rows;
  for (int i : untried_) {
    if (IsPrefix(path, shared_.catalogue_structure[i])) rows.push_back(i);
  }
  return rows;
}

void MosaicSearch::Subsample(std::vector<int>& rows, int n) {
  if (static_cast<int>(rows.size()) <= n) return;
  for (int i = 0; i < n; ++i) {
    const int j =
        i + static_cast<int>(space::UniformIndex(rng_, rows.size() - i));
    std::swap(rows[i], rows[j]);
  }
  rows.resize(n);
}

Eigen::MatrixXd MosaicSearch::Rows(const std::vector<int>& rows) const {
  const Eigen::MatrixXd& all = shared_.surrogate_catalogue->X;
  Eigen::MatrixXd X(rows.size(), all.cols());
  for (size_t i = 0; i < rows.size(); ++i) X.row(i) = all.row(rows[i]);
  return X;
}

std::vector<int> MosaicSearch::PlayoutRows(const MctsPath& path,
                                           const v1::Configuration& center) {
  std::vector<int> rows = CompatibleUntried(path);
  const int budget = shared_.options.playout_samples;
  if (static_cast<int>(rows.size()) <= budget) return rows;
  // The entries nearest the center, then a uniform sample of the others.
  const Eigen::MatrixXd& X = shared_.catalogue->X;
  const Eigen::VectorXd x = shared_.encoder.Encode(center);
  std::vector<int> by_distance = rows;
  std::stable_sort(by_distance.begin(), by_distance.end(), [&](int a, int b) {
    return (X.row(a).transpose() - x).squaredNorm() <
           (X.row(b).transpose() - x).squaredNorm();
  });
  const int near = std::min<int>(shared_.options.catalogue_neighbors,
                                 static_cast<int>(by_distance.size()));
  absl::flat_hash_set<int> chosen(by_distance.begin(),
                                  by_distance.begin() + near);
  std::vector<int> others;
  for (int r : rows) {
    if (!chosen.contains(r)) others.push_back(r);
  }
  Subsample(others, budget);
  rows.assign(by_distance.begin(), by_distance.begin() + near);
  rows.insert(rows.end(), others.begin(), others.end());
  return rows;
}

std::optional<v1::Configuration> MosaicSearch::DesignItem(int i) {
  const int a = i % shared_.first_level_actions;
  const MctsPath path = shared_.levels.empty() ? MctsPath() : MctsPath{a};
  const bool default_item = i < shared_.first_level_actions;
  if (shared_.catalogue != nullptr) {
    std::vector<int> rows = CompatibleUntried(path);
    if (rows.empty()) return std::nullopt;
    int pick = rows[space::UniformIndex(rng_, rows.size())];
    if (default_item) {
      const Eigen::VectorXd center =
          shared_.encoder.Encode(shared_.DefaultCompletion(path));
      double nearest = std::numeric_limits<double>::infinity();
      for (int r : rows) {
        const double d =
            (shared_.catalogue->X.row(r).transpose() - center).squaredNorm();
        if (d < nearest) {
          nearest = d;
          pick = r;
        }
      }
    }
    return spec_.candidates(pick);
  }
  if (default_item) {
    v1::Configuration c = shared_.DefaultCompletion(path);
    if (!held_.contains(space::ConfigurationKey(c))) return c;
  }
  for (int attempt = 0; attempt < 32; ++attempt) {
    v1::Configuration c = shared_.SampleCompletion(path, rng_);
    if (!held_.contains(space::ConfigurationKey(c))) return c;
  }
  return std::nullopt;
}

}  // namespace metaopt::policy
