// Mosaic's search state: what a study's successive policies share (space,
// levels, options, surrogate fitter, structure helpers) and one Suggest call's
// data, surrogate and tree statistics (the MctsEnvironment of its walks).
#ifndef METAOPT_CORE_POLICY_MOSAIC_SEARCH_H_
#define METAOPT_CORE_POLICY_MOSAIC_SEARCH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/acquisition/acquisition_function.h"
#include "core/acquisition/acquisition_search.h"
#include "core/acquisition/pareto_acquisition.h"
#include "core/policy/mcts.h"
#include "core/policy/mosaic_options.h"
#include "core/policy/policy.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {

// Fits the surrogate shared by the tree and the playouts: rows of X are
// space::Encoder encodings of the completed configurations, y the objective to
// MINIMISE. Deterministic given `seed`.
using MosaicSurrogateFitter =
    std::function<absl::StatusOr<std::shared_ptr<const surrogate::Surrogate>>(
        const Eigen::MatrixXd& X, const Eigen::VectorXd& y, uint64_t seed)>;

// The immutable part of a Mosaic policy, shared by its successive versions.
struct MosaicShared {
  MosaicShared(const v1::StudySpec& spec, space::SearchSpace space_in,
               std::vector<int> levels_in, MosaicPolicyOptions options_in,
               MosaicSurrogateFitter fitter_in, ZeroShotDesign zero_shot_in,
               std::shared_ptr<const space::Encoder> model_encoder_in = nullptr)
      : goal(spec.objective().goal()),
        space(std::move(space_in)),
        encoder(space),
        levels(std::move(levels_in)),
        options(std::move(options_in)),
        fitter(std::move(fitter_in)),
        zero_shot(std::move(zero_shot_in)),
        catalogue(acquisition::EncodeCatalogue(spec, encoder)),
        model_encoder(std::move(model_encoder_in)),
        surrogate_catalogue(
            model_encoder == nullptr
                ? catalogue
                : acquisition::EncodeCatalogue(spec, *model_encoder)) {
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
    catalogue_structure.reserve(spec.candidates_size());
    for (const v1::Configuration& c : spec.candidates()) {
      catalogue_structure.push_back(Structure(c));
    }
    first_level_actions =
        levels.empty() ? 1 : proto.stages(levels[0]).algorithms_size();
    if (!zero_shot.configurations.empty()) {
      design_size = 0;
    } else if (spec.algorithm().initial_trials() > 0) {
      design_size = spec.algorithm().initial_trials();
    } else {
      design_size =
          std::min(first_level_actions * (1 + options.random_per_algorithm),
                   std::max(first_level_actions, options.design_cap));
    }
  }

  // The encoder whose rows the surrogate reads: the bound model's (its own
  // space: ranges, log flags and value orders, docs/algorithms.md "Partial
  // binding"), else the study's. The search itself (defaults, neighbours,
  // distances) works in the study's encoding.
  const space::Encoder& surrogate_encoder() const {
    return model_encoder != nullptr ? *model_encoder : encoder;
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
  // The bound model's zero-shot design (portfolio or task-aware), tried first.
  const ZeroShotDesign zero_shot;
  // The study's catalogue (null without one), encoded and keyed once, and
  // the structure of each entry.
  const std::shared_ptr<const acquisition::EncodedCatalogue> catalogue;
  // The bound DeepPipe model's encoder (null: the surrogate reads the
  // study's encoding) and the catalogue in the surrogate's encoding (rows as
  // `catalogue`'s).
  const std::shared_ptr<const space::Encoder> model_encoder;
  const std::shared_ptr<const acquisition::EncodedCatalogue>
      surrogate_catalogue;
  std::vector<MctsPath> catalogue_structure;
  std::vector<int> level_of_stage;
  std::vector<absl::flat_hash_map<std::string, int>> algorithm_index;
  std::vector<std::vector<Param>> block_parameters;  // per layout block
  int first_level_actions = 1;
  int design_size = 0;
};

// One Suggest call: the data, the surrogate and the tree statistics. Not
// thread-safe (one per call).
class MosaicSearch final : public MctsEnvironment {
 public:
  // Valid while `study` is. With `targets` (one per study.trials entry: a
  // study with several objectives, ParEGO's scalarised values), the
  // observations that have one, with that value to minimise instead of their
  // objective's.
  MosaicSearch(const MosaicShared& shared, const StudyView& study,
               space::Rng& rng,
               const std::vector<std::optional<double>>* targets = nullptr);

  int64_t completed() const { return y_.size(); }

  // Fits the shared surrogate on the completed trials.
  absl::Status FitSurrogate();

  // A study with constraints: from here on playouts score log EI below the
  // best target of a feasible observation plus, per constrained metric, the
  // log probability that its model meets the bound
  // (acquisition::ParetoAcquisition with one objective); while no
  // observation is feasible, the probability of feasibility alone. Without
  // this call, log EI below the best target of every observation.
  void SetConstraints(std::vector<acquisition::ModeledConstraint> constraints);

  // What may not be proposed: the configurations the study's trials hold and
  // this call's picks.
  const HeldConfigurations& held() const { return held_; }

  // Counts this call's `pick` (canonical) as a pending trial: held, a virtual
  // visit of the nodes of its structure, a fantasy in later playouts.
  void AddPick(const v1::Configuration& pick);

  // MctsEnvironment.
  std::vector<int> ValidActions(const MctsPath& path) override;
  int64_t Visits(const MctsPath& path) override;
  std::optional<double> Value(const MctsPath& path) override;
  double Estimate(const MctsPath& path) override;

  // The playout at `path`: the EI maximiser among its candidates (none if
  // everything there is held).
  absl::StatusOr<std::optional<v1::Configuration>> Playout(
      const MctsPath& path);

  // Initial-design item `i`: the default (i < |A_1|) or a random pipeline of
  // first-level algorithm i mod |A_1|; none if nothing untried is left there.
  std::optional<v1::Configuration> DesignItem(int i);

 private:
  struct NodeStats {
    int64_t visits = 0;
    std::vector<double> rewards;
  };

  // One trial holding `c`: a visit of every node on its structure's path,
  // with `reward` if the trial has one.
  void Visit(const v1::Configuration& c, std::optional<double> reward);

  // The mid-rank quantile of y (to minimise) among the completed values: 0
  // for the best, 1 for the worst, ties averaged; 0.5 for a single value.
  double Quantile(double y) const;

  // Reward in [0, 1] of a value to minimise (1: the best observed).
  double Reward(double y) const;

  // The reward scale of a surrogate mean.
  double RewardOfMean(double mean) const;

  std::vector<int> CompatibleUntried(const MctsPath& path) const;

  // Keeps a uniform subset of `n` of `rows` (partial Fisher-Yates), in their
  // drawn order.
  void Subsample(std::vector<int>& rows, int n);

  Eigen::MatrixXd Rows(const std::vector<int>& rows) const;

  // The catalogue rows a playout at `path` scores: its untried entries, or
  // when there are more than n_r, the nearest to `center` and n_r others.
  std::vector<int> PlayoutRows(const MctsPath& path,
                               const v1::Configuration& center);

  const MosaicShared& shared_;
  const v1::StudySpec& spec_;
  space::Rng& rng_;
  std::vector<v1::Configuration> completed_;
  Eigen::VectorXd y_;           // to minimise
  std::vector<double> sorted_;  // y_ ascending
  Eigen::VectorXd targets_;     // the surrogate's: y_ or its quantiles
  double best_ = 0, worst_ = 0, scale_ = 1, best_target_ = 0;
  // Per completed_ entry: whether it meets the study's constraints.
  std::vector<bool> feasible_;
  // What playouts maximise (SetConstraints).
  std::unique_ptr<const acquisition::AcquisitionFunction> acquisition_;
  std::shared_ptr<const surrogate::Surrogate> model_;
  HeldConfigurations held_;
  // Catalogue: the untried rows, in catalogue order, and how many of them lie
  // below each node.
  std::vector<int> untried_;
  absl::flat_hash_map<MctsPath, int> untried_below_;
  absl::flat_hash_map<MctsPath, NodeStats> stats_;
  std::vector<v1::Configuration> pending_;
  // Q_F̂ per node, under the surrogate of this call (before fantasies).
  absl::flat_hash_map<MctsPath, double> estimates_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MOSAIC_SEARCH_H_
