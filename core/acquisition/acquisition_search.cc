#include "core/acquisition/acquisition_search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "core/acquisition/acquisition_function.h"
#include "core/common/parallel.h"
#include "core/common/status_macros.h"

namespace metaopt::acquisition {
namespace {

// The refinement chains of a search over a space run on ComputeThreads()
// threads when, at the pool's scoring cost per candidate, they would take
// at least this long on one: below, starting threads costs what they save.
constexpr double kParallelRefineSeconds = 2e-3;

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

// Log-EI and predicted mean of each candidate.
struct Scores {
  Eigen::VectorXd log_ei;
  Eigen::VectorXd mean;
  Ties ties = Ties::kFirst;

  // True if candidate i ranks above candidate j: by log-EI, then as `ties`
  // says; a NaN log-EI never ranks above a number.
  bool Better(int i, int j) const { return Better(i, log_ei[j], mean[j]); }
  bool Better(int i, double other_log_ei, double other_mean) const {
    if (std::isnan(other_log_ei)) return !std::isnan(log_ei[i]);
    if (log_ei[i] != other_log_ei) return log_ei[i] > other_log_ei;
    return ties == Ties::kLowerMean && mean[i] < other_mean;
  }
  void Append(const Scores& more) {
    Eigen::VectorXd a(log_ei.size() + more.log_ei.size());
    a << log_ei, more.log_ei;
    Eigen::VectorXd m(mean.size() + more.mean.size());
    m << mean, more.mean;
    log_ei = std::move(a);
    mean = std::move(m);
  }
};

// After a batch pick at `input` with believed mean `mean`: the acquisition
// function for the next pick (AcquisitionFunction::AfterPick), kept in
// `*owned` when it changes.
absl::Status NextAcquisition(const Eigen::MatrixXd& input, double mean,
                             std::unique_ptr<const AcquisitionFunction>& owned,
                             const AcquisitionFunction*& current) {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<const AcquisitionFunction> next,
                           current->AfterPick(input, mean));
  if (next != nullptr) {
    owned = std::move(next);
    current = owned.get();
  }
  return absl::OkStatus();
}

absl::StatusOr<Scores> ScoreRows(const surrogate::Surrogate& model,
                                 const Eigen::MatrixXd& X,
                                 const AcquisitionFunction& acquisition,
                                 Ties ties) {
  METAOPT_ASSIGN_OR_RETURN(gp::Prediction prediction, model.Predict(X));
  METAOPT_ASSIGN_OR_RETURN(Eigen::VectorXd log_ei,
                           acquisition.Score(prediction, X));
  return Scores{std::move(log_ei), std::move(prediction.mean), ties};
}

// Scores for ArgMax over the rows not `taken`. With a screening bound
// (Surrogate::PredictScreening: exact mean, variance bounded above, hence an
// upper bound on log-EI, which grows with the variance), rows are scored
// exactly in blocks in decreasing order of their bound, until the next bound
// is below the best exact log-EI so far; the rest get -inf. Each of those is
// below an exactly scored row, so ArgMax picks what it would from exact scores
// of every row (up to rounding). Without a bound: ScoreRows of every row.
// With `use_given`, `given` is the screening bound of X's rows (computed
// ahead; nullopt: the model does not screen). With `catalogue_rows` (X's
// rows of a whole catalogue) the bound is AcquisitionFunction's
// ScoreCatalogueBound.
absl::StatusOr<Scores> ScoreForArgMax(
    const surrogate::Surrogate& model, const Eigen::MatrixXd& X,
    const AcquisitionFunction& acquisition, Ties ties,
    const std::vector<bool>& taken,
    std::optional<gp::Prediction> given = std::nullopt, bool use_given = false,
    const CatalogueRows* catalogue_rows = nullptr) {
  constexpr size_t kExactBlock = 128;
  std::optional<gp::Prediction> bound;
  if (use_given) {
    bound = std::move(given);
  } else {
    METAOPT_ASSIGN_OR_RETURN(bound, model.PredictScreening(X));
  }
  if (!bound.has_value() || !acquisition.GrowsWithVariance()) {
    return ScoreRows(model, X, acquisition, ties);
  }
  METAOPT_ASSIGN_OR_RETURN(
      const Eigen::VectorXd bound_log_ei,
      catalogue_rows != nullptr
          ? acquisition.ScoreCatalogueBound(*bound, X, *catalogue_rows)
          : acquisition.ScoreBound(*bound, X));
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // A NaN bound bounds nothing: such rows come first and are never skipped.
  auto key = [&](int i) {
    return std::isnan(bound_log_ei[i]) ? kInf : bound_log_ei[i];
  };
  std::vector<int> order;
  order.reserve(X.rows());
  for (int i = 0; i < X.rows(); ++i) {
    if (!taken[i]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return key(a) > key(b); });
  Scores scores{Eigen::VectorXd::Constant(X.rows(), -kInf),
                std::move(bound->mean), ties};
  double threshold = -kInf;
  for (size_t next = 0; next < order.size() && !(key(order[next]) < threshold);
       next += kExactBlock) {
    const size_t end = std::min(order.size(), next + kExactBlock);
    Eigen::MatrixXd block(end - next, X.cols());
    for (size_t k = next; k < end; ++k) block.row(k - next) = X.row(order[k]);
    METAOPT_ASSIGN_OR_RETURN(Scores exact,
                             ScoreRows(model, block, acquisition, ties));
    for (size_t k = next; k < end; ++k) {
      const double log_ei = exact.log_ei[k - next];
      scores.log_ei[order[k]] = log_ei;
      scores.mean[order[k]] = exact.mean[k - next];
      if (!std::isnan(log_ei)) threshold = std::max(threshold, log_ei);
    }
  }
  return scores;
}

absl::StatusOr<Scores> Score(const surrogate::Surrogate& model,
                             const space::Encoder& encoder,
                             const std::vector<v1::Configuration>& configs,
                             const AcquisitionFunction& acquisition,
                             Ties ties) {
  if (configs.empty()) return Scores{{}, {}, ties};
  return ScoreRows(model, encoder.EncodeBatch(configs), acquisition, ties);
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

// Index of the best candidate that is not excluded; -1 if none.
int ArgMax(const Scores& scores, const std::vector<bool>& excluded) {
  int best = -1;
  for (int i = 0; i < scores.log_ei.size(); ++i) {
    if (excluded[i]) continue;
    if (best < 0 || scores.Better(i, best)) best = i;
  }
  return best;
}

// Adds `start` and the neighbourhoods of a hill climb from it to `pool`
// (SearchOptions::incumbent_steps).
absl::Status ClimbFrom(
    const v1::Configuration& start, const SearchOptions& options,
    absl::FunctionRef<std::vector<v1::Configuration>(const v1::Configuration&)>
        neighbors,
    const surrogate::Surrogate& model, const space::Encoder& encoder,
    const AcquisitionFunction& acquisition, Pool& pool) {
  pool.Add(start);
  v1::Configuration current = start;
  Scores current_score;
  if (options.incumbent_steps > 1) {
    METAOPT_ASSIGN_OR_RETURN(current_score, Score(model, encoder, {current},
                                                  acquisition, options.ties));
  }
  for (int step = 0; step < options.incumbent_steps; ++step) {
    std::vector<v1::Configuration> next = neighbors(current);
    if (step + 1 == options.incumbent_steps) {
      for (v1::Configuration& c : next) pool.Add(std::move(c));
      break;
    }
    if (next.empty()) break;
    // Held neighbours are scored too: the climb may pass through them.
    METAOPT_ASSIGN_OR_RETURN(
        Scores scores, Score(model, encoder, next, acquisition, options.ties));
    const int top = ArgMax(scores, std::vector<bool>(next.size(), false));
    for (const v1::Configuration& c : next) pool.Add(c);
    if (top < 0 ||
        !scores.Better(top, current_score.log_ei[0], current_score.mean[0])) {
      break;
    }
    current = next[top];
    current_score.log_ei[0] = scores.log_ei[top];
    current_score.mean[0] = scores.mean[top];
  }
  return absl::OkStatus();
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
  absl::flat_hash_map<std::pair<std::string, std::string>, int> pair_ids;
  catalogue->algorithm_pairs.reserve(candidates.size());
  for (const v1::Configuration& c : candidates) {
    catalogue->keys.push_back(space::ConfigurationKey(c));
    std::vector<int>& pairs = catalogue->algorithm_pairs.emplace_back();
    for (const v1::Assignment& a : c.assignments()) {
      const auto [it, inserted] = pair_ids.try_emplace(
          std::make_pair(a.stage(), a.algorithm()), pair_ids.size());
      pairs.push_back(it->second);
    }
  }
  catalogue->num_algorithm_pairs = static_cast<int>(pair_ids.size());
  return catalogue;
}

std::shared_ptr<const EncodedCatalogue> WithInputs(
    const EncodedCatalogue& catalogue, Eigen::MatrixXd X) {
  auto out = std::make_shared<EncodedCatalogue>();
  out->keys = catalogue.keys;
  out->X = std::move(X);
  out->algorithm_pairs = catalogue.algorithm_pairs;
  out->num_algorithm_pairs = catalogue.num_algorithm_pairs;
  return out;
}

namespace {

// The unheld rows among `candidates`, in their order.
std::vector<int> UnheldRows(const EncodedCatalogue& catalogue,
                            absl::Span<const int> candidates,
                            HeldPredicate held) {
  std::vector<int> rows;
  rows.reserve(candidates.size());
  for (int i : candidates) {
    if (!held(catalogue.keys[i])) rows.push_back(i);
  }
  return rows;
}

// `rows` of the whole catalogue are screened through its kernel cache
// (Surrogate::PredictCatalogueScreening); a subset of its rows without it.
absl::StatusOr<std::vector<int>> MaximizeOverCatalogueRows(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    absl::Span<const int> candidates, HeldPredicate held,
    const AcquisitionFunction& acquisition, int count, Ties ties,
    const CatalogueScreen* screen, bool whole_catalogue) {
  // Only the untried rows are scored; no protos are built or encoded.
  const std::vector<int> rows = UnheldRows(catalogue, candidates, held);
  std::vector<int> picks;
  if (rows.empty()) return picks;
  const Eigen::MatrixXd X = surrogate::RowsOf(catalogue.X, rows);
  std::vector<bool> taken(rows.size(), false);
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* current = &model;
  std::unique_ptr<const AcquisitionFunction> after_pick;
  const AcquisitionFunction* current_acquisition = &acquisition;
  while (static_cast<int>(picks.size()) < count) {
    // The first pick, on `model` itself, may read the screen computed ahead
    // on exactly these rows (the same values on the same input).
    const bool use_given =
        screen != nullptr && current == &model && screen->rows == rows;
    std::optional<gp::Prediction> bound;
    if (use_given) {
      bound = screen->bound;
    } else if (whole_catalogue) {
      METAOPT_ASSIGN_OR_RETURN(
          bound, current->PredictCatalogueScreening(catalogue.X, rows,
                                                    *catalogue.kernel_cache));
    }
    const CatalogueRows catalogue_rows{catalogue.X, rows,
                                       *catalogue.output_kernel_caches};
    METAOPT_ASSIGN_OR_RETURN(
        Scores scores,
        ScoreForArgMax(*current, X, *current_acquisition, ties, taken,
                       std::move(bound), use_given || whole_catalogue,
                       whole_catalogue ? &catalogue_rows : nullptr));
    const int pick = ArgMax(scores, taken);
    if (pick < 0) break;
    taken[pick] = true;
    picks.push_back(rows[pick]);
    if (static_cast<int>(picks.size()) < count) {
      METAOPT_ASSIGN_OR_RETURN(fantasised, current->WithFantasies(X.row(pick)));
      current = fantasised.get();
      METAOPT_RETURN_IF_ERROR(NextAcquisition(X.row(pick), scores.mean[pick],
                                              after_pick, current_acquisition));
    }
  }
  return picks;
}

}  // namespace

absl::StatusOr<CatalogueScreen> ScreenCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    HeldPredicate held) {
  std::vector<int> all(catalogue.keys.size());
  std::iota(all.begin(), all.end(), 0);
  CatalogueScreen screen;
  screen.rows = UnheldRows(catalogue, all, held);
  if (screen.rows.empty()) return screen;
  METAOPT_ASSIGN_OR_RETURN(
      screen.bound, model.PredictCatalogueScreening(catalogue.X, screen.rows,
                                                    *catalogue.kernel_cache));
  return screen;
}

absl::StatusOr<std::vector<int>> MaximizeOverCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    HeldPredicate held, const AcquisitionFunction& acquisition, int count,
    const CatalogueScreen* screen) {
  std::vector<int> all(catalogue.keys.size());
  std::iota(all.begin(), all.end(), 0);
  return MaximizeOverCatalogueRows(model, catalogue, all, held, acquisition,
                                   count, Ties::kFirst, screen,
                                   /*whole_catalogue=*/true);
}

absl::StatusOr<std::vector<int>> MaximizeOverCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    absl::Span<const int> candidates, HeldPredicate held,
    const AcquisitionFunction& acquisition, int count, Ties ties) {
  return MaximizeOverCatalogueRows(model, catalogue, candidates, held,
                                   acquisition, count, ties, nullptr,
                                   /*whole_catalogue=*/false);
}

absl::StatusOr<std::vector<v1::Configuration>> MaximizeOverSpace(
    const surrogate::Surrogate& model, const space::SearchSpace& space,
    const space::Encoder& encoder, HeldPredicate held,
    const AcquisitionFunction& acquisition,
    const std::vector<v1::Configuration>& incumbents, int count,
    const SearchOptions& options, space::Rng& rng) {
  Pool pool(held);
  for (int i = 0; i < options.random_samples; ++i) {
    pool.Add(options.sample ? options.sample(rng) : space.Sample(rng));
  }
  auto neighbors = [&](const v1::Configuration& center) {
    if (options.neighbors) return options.neighbors(center, rng);
    std::vector<v1::Configuration> out;
    for (int j = 0; j < options.neighbors_per_incumbent; ++j) {
      auto neighbor = InSpace(
          space, encoder.Neighbor(center, options.neighbor_step_sd, rng));
      if (neighbor.has_value()) out.push_back(*std::move(neighbor));
    }
    return out;
  };
  const int num_incumbents =
      std::min<int>(options.incumbents, static_cast<int>(incumbents.size()));
  for (int i = 0; i < num_incumbents; ++i) {
    METAOPT_RETURN_IF_ERROR(ClimbFrom(incumbents[i], options, neighbors, model,
                                      encoder, acquisition, pool));
  }

  std::vector<v1::Configuration> picks;
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* current = &model;
  std::unique_ptr<const AcquisitionFunction> after_pick;
  const AcquisitionFunction* current_acquisition = &acquisition;
  std::vector<bool> taken(pool.configs.size(), false);
  while (static_cast<int>(picks.size()) < count) {
    // Every candidate is scored exactly. (A screen by a cheap upper bound
    // on the acquisition, as over a catalogue, let 97-100 % of the
    // candidates through on the observations of a real GP loop, where the
    // acquisition is flat: it only added its own cost; docs/performance.md.)
    const auto scoring_started = std::chrono::steady_clock::now();
    METAOPT_ASSIGN_OR_RETURN(
        Scores scores, ScoreRows(*current, encoder.EncodeBatch(pool.configs),
                                 *current_acquisition, options.ties));
    const double seconds_per_candidate =
        std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                      scoring_started)
            .count() /
        std::max<double>(1.0, static_cast<double>(pool.configs.size()));
    if (options.refine_top > 0) {
      // Local search from the best few: keep improving neighbours, halving the
      // step every round.
      std::vector<int> order(scores.log_ei.size());
      std::iota(order.begin(), order.end(), 0);
      const int top = std::min<int>(options.refine_top, order.size());
      std::partial_sort(
          order.begin(), order.begin() + top, order.end(),
          [&](int a, int b) { return scores.log_ei[a] > scores.log_ei[b]; });
      // Each chain draws from its own generator, seeded in turn from `rng`,
      // so the chains may run on ComputeThreads() threads with the same
      // picks on any number of them (the model and acquisition are thread-safe;
      // the pool is only read).
      std::vector<uint64_t> seeds(top);
      for (uint64_t& seed : seeds) seed = rng();
      std::vector<std::optional<v1::Configuration>> refined(top);
      std::vector<absl::Status> failures(top);
      // Threads only pay for refinements that take a while (at 100
      // observations they did not; at 300 they did).
      const double refine_seconds = seconds_per_candidate * top *
                                    options.refine_rounds *
                                    options.refine_neighbors;
      const int threads =
          refine_seconds >= kParallelRefineSeconds ? ComputeThreads() : 1;
      ParallelFor(top, threads, [&](int t) {
        if (taken[order[t]]) return;
        space::Rng chain_rng(seeds[t]);
        v1::Configuration center = pool.configs[order[t]];
        double center_log_ei = scores.log_ei[order[t]];
        double center_mean = scores.mean[order[t]];
        double step = options.neighbor_step_sd;
        for (int round = 0; round < options.refine_rounds; ++round, step /= 2) {
          std::vector<v1::Configuration> neighbors;
          for (int k = 0; k < options.refine_neighbors; ++k) {
            auto n = InSpace(space, encoder.Neighbor(center, step, chain_rng));
            if (!n.has_value()) continue;
            if (!pool.Contains(space::ConfigurationKey(*n))) {
              neighbors.push_back(*std::move(n));
            }
          }
          if (neighbors.empty()) continue;
          absl::StatusOr<Scores> neighbor_scores =
              ScoreRows(*current, encoder.EncodeBatch(neighbors),
                        *current_acquisition, options.ties);
          if (!neighbor_scores.ok()) {
            failures[t] = neighbor_scores.status();
            return;
          }
          // A neighbour below the centre never replaces it.
          for (int k = 0; k < neighbor_scores->log_ei.size(); ++k) {
            if (neighbor_scores->Better(k, center_log_ei, center_mean)) {
              center_log_ei = neighbor_scores->log_ei[k];
              center_mean = neighbor_scores->mean[k];
              center = neighbors[k];
            }
          }
        }
        refined[t] = std::move(center);
      });
      std::vector<v1::Configuration> fresh;
      for (int t = 0; t < top; ++t) {
        METAOPT_RETURN_IF_ERROR(failures[t]);
        if (refined[t].has_value()) fresh.push_back(*std::move(refined[t]));
      }
      std::vector<v1::Configuration> added;
      for (v1::Configuration& config : fresh) {
        if (pool.Add(config)) added.push_back(std::move(config));
      }
      if (!added.empty()) {
        METAOPT_ASSIGN_OR_RETURN(Scores added_scores,
                                 Score(*current, encoder, added,
                                       *current_acquisition, options.ties));
        scores.Append(added_scores);
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
      METAOPT_RETURN_IF_ERROR(NextAcquisition(x, scores.mean[pick], after_pick,
                                              current_acquisition));
    }
  }
  return picks;
}

}  // namespace metaopt::acquisition
