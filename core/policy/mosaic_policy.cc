#include "core/policy/mosaic_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/acquisition/acquisition.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/policy/random_policy.h"

namespace metaopt::policy {
namespace {

// A random forest over the encoding with inactive parameters at -1.
class SentinelForest final : public surrogate::Surrogate {
 public:
  SentinelForest(std::shared_ptr<const space::EncodingLayout> layout,
                 std::unique_ptr<const surrogate::Surrogate> forest)
      : layout_(std::move(layout)), forest_(std::move(forest)) {}

  // Rows of X with the blocks of unchosen algorithms set to -1.
  static Eigen::MatrixXd Mark(const space::EncodingLayout& layout,
                              const Eigen::MatrixXd& X) {
    Eigen::MatrixXd out = X;
    for (const space::BlockLayout& block : layout.blocks) {
      if (block.size == 0) continue;
      const int hot = layout.stages[block.stage].offset + block.algorithm;
      for (Eigen::Index i = 0; i < X.rows(); ++i) {
        if (X(i, hot) < 0.5)
          out.row(i).segment(block.offset, block.size).setConstant(-1.0);
      }
    }
    return out;
  }

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    return forest_->Predict(Mark(*layout_, X));
  }
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd& X) const override {
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const Surrogate> forest,
                             forest_->WithFantasies(Mark(*layout_, X)));
    return std::unique_ptr<const Surrogate>(
        new SentinelForest(layout_, std::move(forest)));
  }

 private:
  std::shared_ptr<const space::EncodingLayout> layout_;
  std::unique_ptr<const surrogate::Surrogate> forest_;
};

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

// An acquisition score, compared by log-EI and then by the lower mean (EI is
// exactly 0 for a deterministic prediction without improvement).
struct Score {
  double log_ei = -std::numeric_limits<double>::infinity();
  double mean = std::numeric_limits<double>::infinity();
  bool BetterThan(const Score& o) const {
    if (log_ei != o.log_ei) return log_ei > o.log_ei;
    return mean < o.mean;
  }
};

}  // namespace

absl::StatusOr<MosaicPolicyOptions> MosaicOptionsFromSpec(
    const v1::StudySpec& spec, MosaicPolicyOptions base) {
  const v1::MosaicOptions& m = spec.algorithm().mosaic();
  auto bad = [](const char* field, double value, const char* rule) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.algorithm.mosaic.", field, ": ", value, " ", rule));
  };
  if (m.exploration() < 0 || !std::isfinite(m.exploration())) {
    return bad("exploration", m.exploration(), "must be finite and >= 0");
  }
  if (m.widening_exponent() < 0 || m.widening_exponent() > 1 ||
      std::isnan(m.widening_exponent())) {
    return bad("widening_exponent", m.widening_exponent(),
               "is outside (0, 1] (0: the default 0.6)");
  }
  if (m.prior_samples() < 0)
    return bad("prior_samples", m.prior_samples(), "is negative");
  if (m.playout_samples() < 0) {
    return bad("playout_samples", m.playout_samples(), "is negative");
  }
  if (m.random_per_algorithm() < 0) {
    return bad("random_per_algorithm", m.random_per_algorithm(), "is negative");
  }
  if (m.forest_trees() < 0)
    return bad("forest_trees", m.forest_trees(), "is negative");
  if (m.exploration() > 0) base.mcts.exploration = m.exploration();
  if (m.widening_exponent() > 0)
    base.mcts.widening_exponent = m.widening_exponent();
  if (m.prior_samples() > 0) base.prior_samples = m.prior_samples();
  if (m.playout_samples() > 0) base.playout_samples = m.playout_samples();
  if (m.has_random_per_algorithm())
    base.random_per_algorithm = m.random_per_algorithm();
  if (m.forest_trees() > 0) base.forest.num_trees = m.forest_trees();
  return base;
}

absl::StatusOr<std::vector<int>> MosaicLevels(const v1::StudySpec& spec) {
  const v1::SearchSpace& space = spec.search_space();
  absl::flat_hash_map<std::string, int> stage_index;
  for (int s = 0; s < space.stages_size(); ++s) {
    stage_index[space.stages(s).name()] = s;
  }
  std::vector<bool> placed(space.stages_size(), false);
  std::vector<int> levels;
  const auto& order = spec.algorithm().mosaic().stage_order();
  for (int i = 0; i < order.size(); ++i) {
    auto it = stage_index.find(order[i]);
    if (it == stage_index.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.algorithm.mosaic.stage_order[", i, "]: \"",
                       order[i], "\" is not a stage of the search space"));
    }
    if (placed[it->second]) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.algorithm.mosaic.stage_order[", i, "]: \"",
                       order[i], "\" is listed twice"));
    }
    placed[it->second] = true;
    if (space.stages(it->second).algorithms_size() > 1) {
      levels.push_back(it->second);
    }
  }
  for (int s = space.stages_size() - 1; s >= 0; --s) {
    if (!placed[s] && space.stages(s).algorithms_size() > 1)
      levels.push_back(s);
  }
  return levels;
}

MosaicSurrogateFitter RandomForestFitter(
    const space::EncodingLayout& layout,
    surrogate::RandomForestOptions options) {
  auto shared_layout = std::make_shared<const space::EncodingLayout>(layout);
  return [shared_layout, options](const Eigen::MatrixXd& X,
                                  const Eigen::VectorXd& y, uint64_t seed)
             -> absl::StatusOr<std::shared_ptr<const surrogate::Surrogate>> {
    surrogate::RandomForestOptions o = options;
    o.seed = seed;
    METAOPT_ASSIGN_OR_RETURN(
        std::unique_ptr<const surrogate::RandomForest> forest,
        surrogate::RandomForest::Fit(SentinelForest::Mark(*shared_layout, X), y,
                                     o));
    return std::shared_ptr<const surrogate::Surrogate>(
        new SentinelForest(shared_layout, std::move(forest)));
  };
}

MosaicSurrogateFitter DeepPipeFitter(surrogate::DeepPipeModel model,
                                     int fine_tune_steps) {
  auto shared =
      std::make_shared<const surrogate::DeepPipeModel>(std::move(model));
  return [shared, fine_tune_steps](const Eigen::MatrixXd& X,
                                   const Eigen::VectorXd& y, uint64_t)
             -> absl::StatusOr<std::shared_ptr<const surrogate::Surrogate>> {
    if (fine_tune_steps > 0) {
      surrogate::DeepPipeFineTuneOptions options;
      options.scope = surrogate::FineTuneScope::kKernel;
      options.max_steps = fine_tune_steps;
      absl::StatusOr<surrogate::DeepPipeFineTuneResult> tuned =
          shared->FineTune(X, y, options);
      if (tuned.ok()) return tuned->model.Posterior(X, y);
      LogWarning(absl::StrCat("Mosaic: DeepPipe fine-tuning failed (",
                              tuned.status().ToString(),
                              "); using the model's GP hyperparameters"));
    }
    return shared->Posterior(X, y);
  };
}

// ---------------------------------------------------------------------------
// The immutable part of a policy, shared by its successive versions.

struct MosaicPolicy::Shared {
  Shared(v1::Goal goal, space::SearchSpace space_in, std::vector<int> levels_in,
         MosaicPolicyOptions options_in, MosaicSurrogateFitter fitter_in,
         std::vector<v1::Configuration> portfolio_in, int initial_trials)
      : goal(goal),
        space(std::move(space_in)),
        encoder(space),
        levels(std::move(levels_in)),
        options(std::move(options_in)),
        fitter(std::move(fitter_in)),
        portfolio(std::move(portfolio_in)) {
    const v1::SearchSpace& proto = space.proto();
    level_of_stage.assign(proto.stages_size(), -1);
    for (size_t k = 0; k < levels.size(); ++k) level_of_stage[levels[k]] = k;
    algorithm_index.resize(proto.stages_size());
    for (int s = 0; s < proto.stages_size(); ++s) {
      for (int a = 0; a < proto.stages(s).algorithms_size(); ++a) {
        algorithm_index[s][proto.stages(s).algorithms(a).name()] = a;
      }
    }
    const space::EncodingLayout& layout = encoder.layout();
    block_parameters.resize(layout.blocks.size());
    for (const space::ParameterLayout& p : layout.parameters) {
      const bool categorical = proto.stages(p.stage)
                                   .algorithms(p.algorithm)
                                   .parameters(p.parameter)
                                   .has_categorical_domain();
      block_parameters[layout.block_start[p.stage] + p.algorithm].push_back(
          {p.offset, p.size, categorical});
    }
    first_level_actions =
        levels.empty() ? 1 : proto.stages(levels[0]).algorithms_size();
    if (!portfolio.empty()) {
      design_size = 0;
    } else if (initial_trials > 0) {
      design_size = initial_trials;
    } else {
      design_size =
          std::min(first_level_actions * (1 + options.random_per_algorithm),
                   std::max(first_level_actions, options.design_cap));
    }
  }

  struct Param {
    int offset;
    int size;
    bool categorical;
  };

  int Actions(int level) const {
    return space.proto().stages(levels[level]).algorithms_size();
  }

  // The algorithm index of each level in `c` (canonical).
  MctsPath Structure(const v1::Configuration& c) const {
    MctsPath path(levels.size());
    for (size_t k = 0; k < levels.size(); ++k) {
      const auto& index = algorithm_index[levels[k]];
      auto it = index.find(c.assignments(levels[k]).algorithm());
      path[k] = it == index.end() ? 0 : it->second;
    }
    return path;
  }

  // Sets stage `s` of the encoded `x` to algorithm `a` at its defaults.
  void SetDefault(int s, int a, Eigen::VectorXd& x) const {
    const space::EncodingLayout& layout = encoder.layout();
    const space::StageLayout& stage = layout.stages[s];
    for (int b = 0; b < stage.size; ++b) {
      const space::BlockLayout& block = layout.block(s, b);
      x.segment(block.offset, block.size).setZero();
    }
    x.segment(stage.offset, stage.size).setZero();
    x[stage.offset + a] = 1.0;
    for (const Param& p : block_parameters[layout.block_start[s] + a]) {
      x[p.offset] = p.categorical ? 1.0 : 0.5;
    }
  }

  // The default completion of `path` (see the class comment).
  v1::Configuration DefaultCompletion(const MctsPath& path) const {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(encoder.dimension());
    for (int s = 0; s < space.proto().stages_size(); ++s) {
      const int level = level_of_stage[s];
      const int a =
          level >= 0 && level < static_cast<int>(path.size()) ? path[level] : 0;
      SetDefault(s, a, x);
    }
    return encoder.Decode(x);
  }

  // A draw of D(X(path)): uniform structure below `path`, uniform parameters.
  v1::Configuration SampleCompletion(const MctsPath& path,
                                     space::Rng& rng) const {
    v1::Configuration c = space.Sample(rng);
    for (size_t k = 0; k < path.size(); ++k) {
      const int s = levels[k];
      const v1::Algorithm& algorithm =
          space.proto().stages(s).algorithms(path[k]);
      v1::Assignment* assignment = c.mutable_assignments(s);
      if (assignment->algorithm() == algorithm.name()) continue;
      assignment->set_algorithm(algorithm.name());
      assignment->clear_parameters();
      for (const v1::Parameter& p : algorithm.parameters()) {
        (*assignment->mutable_parameters())[p.name()] =
            space::SampleParameterValue(p, rng);
      }
    }
    return c;
  }

  // One-exchange neighbours of `c` with the levels of `path` frozen (thesis
  // footnote 4, SMAC's steps).
  std::vector<v1::Configuration> Neighbors(const v1::Configuration& c,
                                           const MctsPath& path,
                                           space::Rng& rng) const {
    std::vector<v1::Configuration> out;
    const Eigen::VectorXd x = encoder.Encode(c);
    const space::EncodingLayout& layout = encoder.layout();
    const std::string key = space::ConfigurationKey(c);
    auto push = [&](const Eigen::VectorXd& y) {
      v1::Configuration n = encoder.Decode(y);
      if (space::ConfigurationKey(n) != key) out.push_back(std::move(n));
    };
    for (int s = 0; s < space.proto().stages_size(); ++s) {
      const space::StageLayout& stage = layout.stages[s];
      int chosen = 0;
      for (int b = 0; b < stage.size; ++b) {
        if (x[stage.offset + b] > x[stage.offset + chosen]) chosen = b;
      }
      for (const Param& p : block_parameters[layout.block_start[s] + chosen]) {
        if (p.categorical) {
          int current = 0;
          for (int v = 0; v < p.size; ++v) {
            if (x[p.offset + v] > x[p.offset + current]) current = v;
          }
          for (int v = 0; v < p.size; ++v) {
            if (v == current) continue;
            Eigen::VectorXd y = x;
            y.segment(p.offset, p.size).setZero();
            y[p.offset + v] = 1.0;
            push(y);
          }
        } else {
          for (int j = 0; j < options.neighbors_per_numeric; ++j) {
            Eigen::VectorXd y = x;
            y[p.offset] =
                std::clamp(x[p.offset] + options.local_search_step *
                                             space::StandardNormal(rng),
                           0.0, 1.0);
            push(y);
          }
        }
      }
      const int level = level_of_stage[s];
      const bool frozen = level >= 0 && level < static_cast<int>(path.size());
      if (frozen) continue;
      for (int b = 0; b < stage.size; ++b) {
        if (b == chosen) continue;
        Eigen::VectorXd y = x;
        SetDefault(s, b, y);
        push(y);
      }
    }
    return out;
  }

  const v1::Goal goal;
  const space::SearchSpace space;
  const space::Encoder encoder;
  const std::vector<int> levels;
  const MosaicPolicyOptions options;
  const MosaicSurrogateFitter fitter;
  const std::vector<v1::Configuration> portfolio;
  std::vector<int> level_of_stage;
  std::vector<absl::flat_hash_map<std::string, int>> algorithm_index;
  std::vector<std::vector<Param>> block_parameters;  // per layout block
  int first_level_actions = 1;
  int design_size = 0;
};

// ---------------------------------------------------------------------------
// One Suggest call: the data, the surrogate and the tree statistics.

class MosaicPolicy::Search final : public MctsEnvironment {
 public:
  Search(const Shared& shared, const StudyView& study, space::Rng& rng)
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

  int64_t completed() const { return y_.size(); }

  // Fits the shared surrogate on the completed trials.
  absl::Status FitSurrogate() {
    Eigen::MatrixXd X = shared_.encoder.EncodeBatch(completed_);
    METAOPT_ASSIGN_OR_RETURN(model_, shared_.fitter(X, targets_, rng_()));
    return absl::OkStatus();
  }

  // Points the tree statistics at `study` (this call's picks included).
  void SetView(const StudyView& study) {
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
        NodeStats& s =
            stats_[MctsPath(structure.begin(), structure.begin() + k)];
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

  // MctsEnvironment.
  std::vector<int> ValidActions(const MctsPath& path) override {
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
  int64_t Visits(const MctsPath& path) override {
    auto it = stats_.find(path);
    return it == stats_.end() ? 0 : it->second.visits;
  }
  std::optional<double> Value(const MctsPath& path) override {
    auto it = stats_.find(path);
    if (it == stats_.end() || it->second.rewards.empty()) return std::nullopt;
    return Median(it->second.rewards);
  }
  double Estimate(const MctsPath& path) override {
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

  // The playout at `path`: the EI maximiser among its candidates (none if
  // everything there is held).
  absl::StatusOr<std::optional<v1::Configuration>> Playout(
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

 private:
  struct NodeStats {
    int64_t visits = 0;
    std::vector<double> rewards;
  };

  // The mid-rank quantile of y (to minimise) among the completed values: 0
  // for the best, 1 for the worst, ties averaged; 0.5 for a single value.
  double Quantile(double y) const {
    const double n = static_cast<double>(sorted_.size());
    if (n < 2) return 0.5;
    const auto lower = std::lower_bound(sorted_.begin(), sorted_.end(), y);
    const auto upper = std::upper_bound(sorted_.begin(), sorted_.end(), y);
    const double less = static_cast<double>(lower - sorted_.begin());
    const double equal = static_cast<double>(upper - lower);
    return (less + std::max(0.0, equal - 1) / 2) / (n - 1);
  }

  // Reward in [0, 1] of an objective value (1: the best observed).
  double Reward(double value) const {
    const double y = shared_.goal == v1::GOAL_MAXIMIZE ? -value : value;
    if (shared_.options.rank_scale) return 1.0 - Quantile(y);
    if (!(worst_ > best_)) return 0.5;
    return (worst_ - y) / scale_;
  }

  // The reward scale of a surrogate mean.
  double RewardOfMean(double mean) const {
    if (shared_.options.rank_scale) return 1.0 - mean;
    return (worst_ - mean) / scale_;
  }

  std::vector<int> CompatibleUntried(const MctsPath& path) const {
    std::vector<int> rows;
    for (int i : untried_) {
      if (IsPrefix(path, catalogue_structure_[i])) rows.push_back(i);
    }
    return rows;
  }

  // Keeps a uniform subset of `n` of `rows` (partial Fisher-Yates), in their
  // drawn order.
  void Subsample(std::vector<int>& rows, int n) {
    if (static_cast<int>(rows.size()) <= n) return;
    for (int i = 0; i < n; ++i) {
      const int j =
          i + static_cast<int>(space::UniformIndex(rng_, rows.size() - i));
      std::swap(rows[i], rows[j]);
    }
    rows.resize(n);
  }

  Eigen::MatrixXd Rows(const std::vector<int>& rows) const {
    Eigen::MatrixXd X(rows.size(), catalogue_X_.cols());
    for (size_t i = 0; i < rows.size(); ++i)
      X.row(i) = catalogue_X_.row(rows[i]);
    return X;
  }

  absl::StatusOr<std::vector<Score>> ScoreRows(
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

  absl::StatusOr<std::vector<Score>> ScoreAll(
      const std::vector<v1::Configuration>& configs,
      const surrogate::Surrogate& model) const {
    return ScoreRows(shared_.encoder.EncodeBatch(configs), model);
  }

  absl::StatusOr<std::optional<v1::Configuration>> CataloguePlayout(
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
      std::stable_sort(
          by_distance.begin(), by_distance.end(), [&](int a, int b) {
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

 public:
  // Initial-design item `i`: the default (i < |A_1|) or a random pipeline of
  // first-level algorithm i mod |A_1|; none if nothing untried is left there.
  std::optional<v1::Configuration> DesignItem(int i) {
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

 private:
  const Shared& shared_;
  const v1::StudySpec& spec_;
  space::Rng& rng_;
  std::vector<v1::Configuration> completed_;
  Eigen::VectorXd y_;           // to minimise
  std::vector<double> sorted_;  // y_ ascending
  Eigen::VectorXd targets_;     // the surrogate's: y_ or its quantiles
  double best_ = 0, worst_ = 0, scale_ = 1, best_target_ = 0;
  std::shared_ptr<const surrogate::Surrogate> model_;
  // Catalogue: structure and encoding of every entry; the untried ones.
  std::vector<MctsPath> catalogue_structure_;
  Eigen::MatrixXd catalogue_X_;
  absl::flat_hash_map<const v1::Configuration*, int> catalogue_index_;
  std::vector<int> untried_;
  absl::flat_hash_set<MctsPath> untried_prefixes_;
  absl::flat_hash_map<MctsPath, NodeStats> stats_;
  absl::flat_hash_set<std::string> held_;
  std::vector<v1::Configuration> pending_;
  // Q_F̂ per node, under the surrogate of this call (before fantasies).
  absl::flat_hash_map<MctsPath, double> estimates_;
};

// ---------------------------------------------------------------------------

absl::StatusOr<std::shared_ptr<const MosaicPolicy>> MosaicPolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::MosaicPolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    std::optional<MosaicPolicyOptions> options, MosaicSurrogateFitter fitter) {
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  METAOPT_ASSIGN_OR_RETURN(
      MosaicPolicyOptions resolved,
      MosaicOptionsFromSpec(spec, options.value_or(MosaicPolicyOptions())));
  METAOPT_ASSIGN_OR_RETURN(std::vector<int> levels, MosaicLevels(spec));
  std::vector<v1::Configuration> portfolio = PortfolioForStudy(
      model == nullptr ? nullptr : &model->artifact, spec, space);
  if (fitter == nullptr &&
      spec.algorithm().mosaic().surrogate() == v1::MOSAIC_SURROGATE_DEEPPIPE) {
    absl::StatusOr<surrogate::DeepPipeModel> network =
        model != nullptr && model->artifact.kind() == v1::MODEL_KIND_DEEPPIPE
            ? surrogate::DeepPipeModel::FromArtifact(model->artifact)
            : surrogate::DeepPipeModel::Create(
                  spec.search_space(), surrogate::DeepPipeArchitecture(),
                  spec.seed());
    if (!network.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "spec.algorithm.mosaic.surrogate: MOSAIC_SURROGATE_DEEPPIPE: the "
          "DeepPipe model cannot be built: ",
          network.status().message()));
    }
    if (network->input_dim() != space::Encoder(space).dimension()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "spec.algorithm.mosaic.surrogate: MOSAIC_SURROGATE_DEEPPIPE: the "
          "bound model ",
          model != nullptr ? model->reference() : "", " encodes ",
          network->input_dim(), " dimensions; the study's space encodes ",
          space::Encoder(space).dimension()));
    }
    fitter =
        DeepPipeFitter(*std::move(network), resolved.deeppipe_fine_tune_steps);
  }
  if (fitter == nullptr) {
    fitter =
        RandomForestFitter(space::Encoder(space).layout(), resolved.forest);
  }
  auto shared = std::make_shared<const Shared>(
      spec.objective().goal(), std::move(space), std::move(levels),
      std::move(resolved), std::move(fitter), std::move(portfolio),
      spec.algorithm().initial_trials());
  MctsTree tree(static_cast<int>(shared->levels.size()));
  if (!state.has_value()) state = v1::MosaicPolicyState();
  for (const v1::MosaicNode& node : state->nodes()) {
    MctsPath path(node.algorithms().begin(), node.algorithms().end());
    bool fits = path.size() >= 2 && path.size() <= shared->levels.size();
    for (size_t k = 0; fits && k < path.size(); ++k) {
      fits = path[k] >= 0 && path[k] < shared->Actions(static_cast<int>(k));
    }
    if (!fits || !tree.Add(path).ok()) {
      return absl::DataLossError(
          absl::StrCat("stored Mosaic tree node [", absl::StrJoin(path, ","),
                       "] does not fit the study's space"));
    }
  }
  return std::shared_ptr<const MosaicPolicy>(
      new MosaicPolicy(std::move(shared), std::move(tree), *std::move(state)));
}

MosaicPolicy::MosaicPolicy(std::shared_ptr<const Shared> shared, MctsTree tree,
                           v1::MosaicPolicyState state)
    : shared_(std::move(shared)),
      tree_(std::move(tree)),
      state_(std::move(state)) {}

const std::vector<int>& MosaicPolicy::levels() const { return shared_->levels; }

namespace {

// `study` with `extra` configurations also held (ACTIVE).
struct PicksView {
  PicksView(const StudyView& study, const std::vector<v1::Configuration>& extra)
      : trials(*study.trials), view(study) {
    for (const v1::Configuration& c : extra) {
      v1::Trial t;
      *t.mutable_configuration() = c;
      t.set_state(v1::TRIAL_STATE_ACTIVE);
      trials.push_back(std::move(t));
    }
    view.trials = &trials;
  }
  std::vector<v1::Trial> trials;
  StudyView view;
};

}  // namespace

absl::StatusOr<SuggestResult> MosaicPolicy::Suggest(const StudyView& study,
                                                    int count,
                                                    space::Rng& rng) const {
  const Shared& shared = *shared_;
  SuggestResult result;
  std::vector<std::string> sources;
  auto finish = [&] {
    result.source = "mosaic/" + absl::StrJoin(sources, "+");
    return result;
  };
  auto remaining = [&] {
    return count - static_cast<int>(result.configurations.size());
  };
  // 1. Zero-shot start.
  result.configurations = NextPortfolioEntries(study, shared.portfolio, count);
  if (!result.configurations.empty()) sources.push_back("portfolio");
  if (remaining() <= 0) return finish();

  Search search(shared, study, rng);
  // 2. Initial design (Mosaic.Vanilla), then random while the surrogate has
  // fewer than two observations.
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  bool designed = false;
  for (int64_t i = started; i < shared.design_size && remaining() > 0; ++i) {
    PicksView augmented(study, result.configurations);
    search.SetView(augmented.view);
    std::optional<v1::Configuration> item =
        search.DesignItem(static_cast<int>(i));
    if (!item.has_value()) continue;
    result.configurations.push_back(*std::move(item));
    designed = true;
  }
  if (designed) sources.push_back("initial-design");
  if (remaining() > 0 && search.completed() < 2) {
    PicksView augmented(study, result.configurations);
    for (v1::Configuration& c :
         RandomPolicy::Sample(augmented.view, remaining(), rng)) {
      result.configurations.push_back(std::move(c));
    }
    sources.push_back("random");
  }
  if (remaining() <= 0 || search.completed() < 2) return finish();

  // 3. Tree walks and playouts.
  if (absl::Status fitted = search.FitSurrogate(); !fitted.ok()) {
    LogWarning(absl::StrCat("Mosaic surrogate fit failed (", fitted.ToString(),
                            "); suggesting at random"));
    PicksView augmented(study, result.configurations);
    for (v1::Configuration& c :
         RandomPolicy::Sample(augmented.view, remaining(), rng)) {
      result.configurations.push_back(std::move(c));
    }
    sources.push_back("random-fallback");
    return finish();
  }
  MctsTree tree = tree_;
  bool walked = false;
  while (remaining() > 0) {
    PicksView augmented(study, result.configurations);
    search.SetView(augmented.view);
    absl::StatusOr<MctsWalk> walk = tree.Walk(search, shared.options.mcts);
    if (absl::IsNotFound(walk.status())) break;  // the catalogue ran out
    METAOPT_RETURN_IF_ERROR(walk.status());
    METAOPT_ASSIGN_OR_RETURN(std::optional<v1::Configuration> pick,
                             search.Playout(walk->path));
    if (!pick.has_value()) {
      // Everything the playout found below the node is held (a small
      // discrete space): a random configuration anywhere instead.
      std::vector<v1::Configuration> fallback =
          RandomPolicy::Sample(augmented.view, 1, rng);
      if (fallback.empty()) break;
      pick = std::move(fallback[0]);
    }
    result.configurations.push_back(*std::move(pick));
    walked = true;
  }
  if (walked) sources.push_back("mcts");
  if (tree.added().size() > tree_.added().size()) {
    v1::MosaicPolicyState state;
    for (const MctsPath& path : tree.added()) {
      state.add_nodes()->mutable_algorithms()->Assign(path.begin(), path.end());
    }
    v1::PolicyState wrapper;
    *wrapper.mutable_mosaic() = state;
    PolicyUpdate update;
    update.policy = std::shared_ptr<const MosaicPolicy>(
        new MosaicPolicy(shared_, std::move(tree), state));
    update.state = wrapper.SerializeAsString();
    result.update = std::move(update);
  }
  return finish();
}

}  // namespace metaopt::policy
