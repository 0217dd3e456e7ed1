#include "core/policy/mosaic_search.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/acquisition/acquisition.h"
#include "core/common/status_macros.h"

namespace metaopt::policy {
namespace {

// A surrogate owned through a shared_ptr, as a Surrogate (for WithFantasies
// on a shared base with no pending rows).
class SharedSurrogate final : public surrogate::Surrogate {
 public:
  explicit SharedSurrogate(std::shared_ptr<const Surrogate> base)
      : base_(std::move(base)) {}
  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    return base_->Predict(X);
  }
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override {
    return base_->WithFantasies(X);
  }

 private:
  std::shared_ptr<const Surrogate> base_;
};

bool IsPrefix(const MctsPath& prefix, const MctsPath& structure) {
  return std::equal(prefix.begin(), prefix.end(), structure.begin());
}

}  // namespace

MosaicSearch::MosaicSearch(const MosaicShared& shared, const StudyView& study,
                           space::Rng& rng)
    : shared_(shared), spec_(*study.spec), rng_(rng) {
  const bool maximize = shared.goal == v1::GOAL_MAXIMIZE;
  std::vector<double> ys;
  for (const v1::Trial& trial : *study.trials) {
    if (trial.state() == v1::TRIAL_STATE_COMPLETED && trial.has_value()) {
      completed_.push_back(trial.configuration());
      ys.push_back(maximize ? -trial.value() : trial.value());
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
  if (!spec_.candidates().empty()) {
    const int n = spec_.candidates_size();
    catalogue_structure_.reserve(n);
    std::vector<v1::Configuration> all(spec_.candidates().begin(),
                                       spec_.candidates().end());
    for (int i = 0; i < n; ++i) {
      catalogue_structure_.push_back(shared.Structure(all[i]));
      catalogue_index_[&spec_.candidates(i)] = i;
    }
    catalogue_X_ = shared.encoder.EncodeBatch(all);
  }
}

absl::Status MosaicSearch::FitSurrogate() {
  Eigen::MatrixXd X = shared_.encoder.EncodeBatch(completed_);
  METAOPT_ASSIGN_OR_RETURN(model_, shared_.fitter(X, targets_, rng_()));
  return absl::OkStatus();
}

void MosaicSearch::SetView(const StudyView& study) {
  stats_.clear();
  held_.clear();
  pending_.clear();
  for (const v1::Trial& trial : *study.trials) {
    if (!HoldsConfiguration(trial.state())) continue;
    held_.insert(space::ConfigurationKey(trial.configuration()));
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
      pending_.push_back(trial.configuration());
    }
    std::optional<double> reward;
    if (trial.state() == v1::TRIAL_STATE_COMPLETED && trial.has_value()) {
      reward = Reward(trial.value());
    } else if (trial.state() != v1::TRIAL_STATE_ACTIVE) {
      reward = 0.0;  // failed or infeasible (or completed without a value)
    }
    MctsPath structure = shared_.Structure(trial.configuration());
    for (size_t k = 0; k <= structure.size(); ++k) {
      NodeStats& s = stats_[MctsPath(structure.begin(), structure.begin() + k)];
      ++s.visits;
      if (reward.has_value()) s.rewards.push_back(*reward);
    }
  }
  untried_.clear();
  untried_prefixes_.clear();
  if (!spec_.candidates().empty()) {
    for (const v1::Configuration* c : UntriedCandidates(study)) {
      const int i = catalogue_index_.at(c);
      untried_.push_back(i);
      const MctsPath& structure = catalogue_structure_[i];
      for (size_t k = 0; k <= structure.size(); ++k) {
        untried_prefixes_.insert(
            MctsPath(structure.begin(), structure.begin() + k));
      }
    }
  }
}

std::vector<int> MosaicSearch::ValidActions(const MctsPath& path) {
  std::vector<int> valid;
  const int actions = shared_.Actions(static_cast<int>(path.size()));
  MctsPath child = path;
  child.push_back(0);
  for (int a = 0; a < actions; ++a) {
    child.back() = a;
    if (spec_.candidates().empty() || untried_prefixes_.contains(child)) {
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
  if (spec_.candidates().empty()) {
    std::vector<v1::Configuration> samples;
    samples.reserve(n);
    for (int i = 0; i < n; ++i) {
      samples.push_back(shared_.SampleCompletion(path, rng_));
    }
    X = shared_.encoder.EncodeBatch(samples);
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
  std::unique_ptr<const surrogate::Surrogate> model;
  if (pending_.empty()) {
    model = std::make_unique<const SharedSurrogate>(model_);
  } else {
    METAOPT_ASSIGN_OR_RETURN(
        model, model_->WithFantasies(shared_.encoder.EncodeBatch(pending_)));
  }
  // The incumbent below `path`: the best evaluated compatible configuration.
  std::optional<v1::Configuration> incumbent;
  double incumbent_y = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < completed_.size(); ++i) {
    if (y_[i] < incumbent_y &&
        IsPrefix(path, shared_.Structure(completed_[i]))) {
      incumbent_y = y_[i];
      incumbent = completed_[i];
    }
  }
  if (!spec_.candidates().empty())
    return CataloguePlayout(path, incumbent, *model);

  std::vector<v1::Configuration> candidates;
  absl::flat_hash_set<std::string> seen;
  auto add = [&](v1::Configuration c) {
    std::string key = space::ConfigurationKey(c);
    if (held_.contains(key) || !seen.insert(std::move(key)).second)
      return false;
    candidates.push_back(std::move(c));
    return true;
  };
  for (int i = 0; i < shared_.options.playout_samples; ++i) {
    add(shared_.SampleCompletion(path, rng_));
  }
  // Local search from the incumbent (or the default completion).
  v1::Configuration current =
      incumbent.has_value() ? *incumbent : shared_.DefaultCompletion(path);
  add(current);
  METAOPT_ASSIGN_OR_RETURN(std::vector<Score> current_score,
                           ScoreAll({current}, *model));
  for (int step = 0; step < shared_.options.local_search_steps; ++step) {
    std::vector<v1::Configuration> neighbors =
        shared_.Neighbors(current, path, rng_);
    if (neighbors.empty()) break;
    METAOPT_ASSIGN_OR_RETURN(std::vector<Score> scores,
                             ScoreAll(neighbors, *model));
    int best = 0;
    for (size_t i = 1; i < scores.size(); ++i) {
      if (scores[i].BetterThan(scores[best])) best = static_cast<int>(i);
    }
    for (const v1::Configuration& n : neighbors) add(n);
    if (!scores[best].BetterThan(current_score[0])) break;
    current = neighbors[best];
    current_score[0] = scores[best];
  }
  if (candidates.empty()) return std::nullopt;
  METAOPT_ASSIGN_OR_RETURN(std::vector<Score> scores,
                           ScoreAll(candidates, *model));
  int best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    if (scores[i].BetterThan(scores[best])) best = static_cast<int>(i);
  }
  return candidates[best];
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

double MosaicSearch::Reward(double value) const {
  const double y = shared_.goal == v1::GOAL_MAXIMIZE ? -value : value;
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
    if (IsPrefix(path, catalogue_structure_[i])) rows.push_back(i);
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
  Eigen::MatrixXd X(rows.size(), catalogue_X_.cols());
  for (size_t i = 0; i < rows.size(); ++i) X.row(i) = catalogue_X_.row(rows[i]);
  return X;
}

absl::StatusOr<std::vector<MosaicSearch::Score>> MosaicSearch::ScoreRows(
    const Eigen::MatrixXd& X, const surrogate::Surrogate& model) const {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction p, model.Predict(X));
  std::vector<Score> scores(X.rows());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    scores[i].log_ei = acquisition::LogExpectedImprovement(
        p.mean[i], p.variance[i], best_target_);
    scores[i].mean = p.mean[i];
    if (std::isnan(scores[i].log_ei)) {
      scores[i].log_ei = -std::numeric_limits<double>::infinity();
    }
  }
  return scores;
}

absl::StatusOr<std::vector<MosaicSearch::Score>> MosaicSearch::ScoreAll(
    const std::vector<v1::Configuration>& configs,
    const surrogate::Surrogate& model) const {
  return ScoreRows(shared_.encoder.EncodeBatch(configs), model);
}

absl::StatusOr<std::optional<v1::Configuration>> MosaicSearch::CataloguePlayout(
    const MctsPath& path, const std::optional<v1::Configuration>& incumbent,
    const surrogate::Surrogate& model) {
  std::vector<int> rows = CompatibleUntried(path);
  if (rows.empty()) return std::nullopt;
  const int budget = shared_.options.playout_samples;
  if (static_cast<int>(rows.size()) > budget) {
    // The entries nearest the incumbent (or the default completion), then
    // a uniform sample of the others.
    const Eigen::VectorXd center = shared_.encoder.Encode(
        incumbent.has_value() ? *incumbent : shared_.DefaultCompletion(path));
    std::vector<int> by_distance = rows;
    std::stable_sort(by_distance.begin(), by_distance.end(), [&](int a, int b) {
      return (catalogue_X_.row(a).transpose() - center).squaredNorm() <
             (catalogue_X_.row(b).transpose() - center).squaredNorm();
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
  }
  METAOPT_ASSIGN_OR_RETURN(std::vector<Score> scores,
                           ScoreRows(Rows(rows), model));
  int best = 0;
  for (size_t i = 1; i < scores.size(); ++i) {
    if (scores[i].BetterThan(scores[best])) best = static_cast<int>(i);
  }
  return spec_.candidates(rows[best]);
}

std::optional<v1::Configuration> MosaicSearch::DesignItem(int i) {
  const int a = i % shared_.first_level_actions;
  const MctsPath path = shared_.levels.empty() ? MctsPath() : MctsPath{a};
  const bool default_item = i < shared_.first_level_actions;
  if (!spec_.candidates().empty()) {
    std::vector<int> rows = CompatibleUntried(path);
    if (rows.empty()) return std::nullopt;
    int pick = rows[space::UniformIndex(rng_, rows.size())];
    if (default_item) {
      const Eigen::VectorXd center =
          shared_.encoder.Encode(shared_.DefaultCompletion(path));
      double nearest = std::numeric_limits<double>::infinity();
      for (int r : rows) {
        const double d =
            (catalogue_X_.row(r).transpose() - center).squaredNorm();
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
