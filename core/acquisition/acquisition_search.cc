#include "core/acquisition/acquisition_search.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "core/acquisition/acquisition.h"
#include "core/common/status_macros.h"

namespace metaopt::acquisition {
namespace {

// Candidates, unique by key and never held.
struct Pool {
  explicit Pool(HeldPredicate held_in) : held(held_in) {}

  bool Contains(const std::string& key) const {
    return held(key) || seen.contains(key);
  }
  bool Add(v1::Configuration config) {
    std::string key = space::ConfigurationKey(config);
    if (held(key) || !seen.insert(std::move(key)).second) return false;
    configs.push_back(std::move(config));
    return true;
  }

  HeldPredicate held;
  std::vector<v1::Configuration> configs;
  absl::flat_hash_set<std::string> seen;
};

absl::StatusOr<Eigen::VectorXd> ScoreLogEi(
    const surrogate::Surrogate& model, const space::Encoder& encoder,
    const std::vector<v1::Configuration>& configs, double best) {
  if (configs.empty()) return Eigen::VectorXd();
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction,
                           model.Predict(encoder.EncodeBatch(configs)));
  return LogExpectedImprovement(prediction.mean, prediction.variance, best);
}

// `config` canonical in `space`, or nothing if it lies outside. (A model's
// encoder may span other ranges than the study: its neighbours can step beyond
// the study's bounds.)
std::optional<v1::Configuration> InSpace(const space::SearchSpace& space,
                                         const v1::Configuration& config) {
  auto canonical = space.Canonicalize(config, "neighbor");
  if (!canonical.ok()) return std::nullopt;
  return *std::move(canonical);
}

// Index of the largest score whose candidate is not excluded; -1 if none.
int ArgMax(const Eigen::VectorXd& scores, const std::vector<bool>& excluded) {
  int best = -1;
  for (int i = 0; i < scores.size(); ++i) {
    if (excluded[i]) continue;
    // NaN-safe: a NaN score never wins.
    if (best < 0 || scores[i] > scores[best] ||
        (std::isnan(scores[best]) && !std::isnan(scores[i]))) {
      best = i;
    }
  }
  return best;
}

}  // namespace

std::shared_ptr<const EncodedCatalogue> EncodeCatalogue(
    const v1::StudySpec& spec, const space::Encoder& encoder) {
  if (spec.candidates().empty()) return nullptr;
  auto catalogue = std::make_shared<EncodedCatalogue>();
  std::vector<v1::Configuration> candidates(spec.candidates().begin(),
                                            spec.candidates().end());
  catalogue->X = encoder.EncodeBatch(candidates);
  catalogue->keys.reserve(candidates.size());
  for (const v1::Configuration& c : candidates) {
    catalogue->keys.push_back(space::ConfigurationKey(c));
  }
  return catalogue;
}

absl::StatusOr<std::vector<int>> MaximizeOverCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    HeldPredicate held, double best, int count) {
  // Only the untried rows are scored; no protos are built or encoded.
  std::vector<int> rows;
  rows.reserve(catalogue.keys.size());
  for (size_t i = 0; i < catalogue.keys.size(); ++i) {
    if (!held(catalogue.keys[i])) rows.push_back(static_cast<int>(i));
  }
  std::vector<int> picks;
  if (rows.empty()) return picks;
  Eigen::MatrixXd X(rows.size(), catalogue.X.cols());
  for (size_t r = 0; r < rows.size(); ++r) X.row(r) = catalogue.X.row(rows[r]);
  std::vector<bool> taken(rows.size(), false);
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* current = &model;
  while (static_cast<int>(picks.size()) < count) {
    METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction, current->Predict(X));
    METAOPT_ASSIGN_OR_RETURN(
        Eigen::VectorXd scores,
        LogExpectedImprovement(prediction.mean, prediction.variance, best));
    const int pick = ArgMax(scores, taken);
    if (pick < 0) break;
    taken[pick] = true;
    picks.push_back(rows[pick]);
    if (static_cast<int>(picks.size()) < count) {
      METAOPT_ASSIGN_OR_RETURN(fantasised, current->WithFantasies(X.row(pick)));
      current = fantasised.get();
    }
  }
  return picks;
}

absl::StatusOr<std::vector<v1::Configuration>> MaximizeOverSpace(
    const surrogate::Surrogate& model, const space::SearchSpace& space,
    const space::Encoder& encoder, HeldPredicate held, double best,
    const std::vector<v1::Configuration>& incumbents, int count,
    const SearchOptions& options, space::Rng& rng) {
  Pool pool(held);
  for (int i = 0; i < options.random_samples; ++i) {
    pool.Add(space.Sample(rng));
  }
  const int num_incumbents =
      std::min<int>(options.incumbents, static_cast<int>(incumbents.size()));
  for (int i = 0; i < num_incumbents; ++i) {
    for (int j = 0; j < options.neighbors_per_incumbent; ++j) {
      auto neighbor = InSpace(
          space,
          encoder.Neighbor(incumbents[i], options.neighbor_step_sd, rng));
      if (neighbor.has_value()) pool.Add(*std::move(neighbor));
    }
  }

  std::vector<v1::Configuration> picks;
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* current = &model;
  std::vector<bool> taken(pool.configs.size(), false);
  while (static_cast<int>(picks.size()) < count) {
    METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd scores,
                             ScoreLogEi(*current, encoder, pool.configs, best));
    if (options.refine_top > 0) {
      // Local search from the best few: keep improving neighbours, halving the
      // step every round.
      std::vector<int> order(scores.size());
      std::iota(order.begin(), order.end(), 0);
      const int top = std::min<int>(options.refine_top, scores.size());
      std::partial_sort(order.begin(), order.begin() + top, order.end(),
                        [&](int a, int b) { return scores[a] > scores[b]; });
      std::vector<v1::Configuration> fresh;
      for (int t = 0; t < top; ++t) {
        if (taken[order[t]]) continue;
        v1::Configuration center = pool.configs[order[t]];
        double center_score = scores[order[t]];
        double step = options.neighbor_step_sd;
        for (int round = 0; round < options.refine_rounds; ++round, step /= 2) {
          std::vector<v1::Configuration> neighbors;
          for (int k = 0; k < options.refine_neighbors; ++k) {
            auto n = InSpace(space, encoder.Neighbor(center, step, rng));
            if (!n.has_value()) continue;
            if (!pool.Contains(space::ConfigurationKey(*n))) {
              neighbors.push_back(*std::move(n));
            }
          }
          METAOPT_ASSIGN_OR_RETURN(
              Eigen::VectorXd neighbor_scores,
              ScoreLogEi(*current, encoder, neighbors, best));
          for (int k = 0; k < neighbor_scores.size(); ++k) {
            if (neighbor_scores[k] > center_score) {
              center_score = neighbor_scores[k];
              center = neighbors[k];
            }
          }
        }
        fresh.push_back(std::move(center));
      }
      std::vector<v1::Configuration> added;
      for (v1::Configuration& config : fresh) {
        if (pool.Add(config)) added.push_back(std::move(config));
      }
      if (!added.empty()) {
        METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd added_scores,
                                 ScoreLogEi(*current, encoder, added, best));
        Eigen::VectorXd all(scores.size() + added_scores.size());
        all << scores, added_scores;
        scores = std::move(all);
        taken.resize(pool.configs.size(), false);
      }
    }
    const int pick = ArgMax(scores, taken);
    if (pick < 0) break;  // a tiny space ran out
    taken[pick] = true;
    picks.push_back(pool.configs[pick]);
    if (static_cast<int>(picks.size()) < count) {
      Eigen::MatrixXd x = encoder.EncodeBatch({pool.configs[pick]});
      METAOPT_ASSIGN_OR_RETURN(fantasised, current->WithFantasies(x));
      current = fantasised.get();
    }
  }
  return picks;
}

}  // namespace metaopt::acquisition
