#include "core/policy/model_based.h"

#include <algorithm>
#include <atomic>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/objective/objective.h"
#include "core/policy/parego_step.h"
#include "core/policy/pareto_step.h"
#include "core/policy/random_policy.h"

namespace metaopt::policy {

TrainingData CollectTrainingData(
    const StudyView& study, const space::Encoder& encoder,
    const std::vector<std::optional<double>>* targets) {
  const v1::Goal goal = study.spec->objective().goal();
  std::vector<const v1::Trial*> completed;
  std::vector<double> values;
  const std::vector<v1::Trial>& trials = *study.trials;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (!IsObservation(trials[i])) continue;
    if (targets == nullptr) {
      completed.push_back(&trials[i]);
      values.push_back(objective::Minimized(trials[i].value(), goal));
    } else if ((*targets)[i].has_value()) {
      completed.push_back(&trials[i]);
      values.push_back(*(*targets)[i]);
    }
  }
  TrainingData data;
  data.X.resize(static_cast<Eigen::Index>(completed.size()),
                encoder.dimension());
  data.y.resize(static_cast<Eigen::Index>(completed.size()));
  for (size_t i = 0; i < completed.size(); ++i) {
    data.X.row(i) = encoder.Encode(completed[i]->configuration()).transpose();
    data.y[i] = values[i];
  }
  std::vector<int> order(completed.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return data.y[a] < data.y[b]; });
  for (int i : order) data.best_first.push_back(completed[i]->configuration());
  return data;
}

TrainingData FitSample(const TrainingData& data, int max_points) {
  const Eigen::Index n = data.y.size();
  TrainingData sample;
  if (max_points <= 0 || n <= max_points) {
    sample.X = data.X;
    sample.y = data.y;
    return sample;
  }
  sample.X.resize(max_points, data.X.cols());
  sample.y.resize(max_points);
  for (Eigen::Index i = 0; i < max_points; ++i) {
    const Eigen::Index row = i * n / max_points;
    sample.X.row(i) = data.X.row(row);
    sample.y[i] = data.y[row];
  }
  return sample;
}

Eigen::MatrixXd PendingInputs(const StudyView& study,
                              const std::vector<v1::Configuration>& picks,
                              const space::Encoder& encoder) {
  std::vector<v1::Configuration> pending;
  for (const v1::Trial& trial : *study.trials) {
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) {
      pending.push_back(trial.configuration());
    }
  }
  pending.insert(pending.end(), picks.begin(), picks.end());
  if (pending.empty()) return Eigen::MatrixXd(0, encoder.dimension());
  return encoder.EncodeBatch(pending);
}

std::vector<int> RowsOfAnUntriedAlgorithm(
    const acquisition::EncodedCatalogue& catalogue,
    acquisition::HeldPredicate held, space::Rng& rng) {
  const int n = static_cast<int>(catalogue.algorithm_pairs.size());
  std::vector<bool> tried(catalogue.num_algorithm_pairs, false);
  std::vector<bool> unheld(n);
  for (int i = 0; i < n; ++i) {
    unheld[i] = !held(catalogue.keys[i]);
    if (unheld[i]) continue;
    for (int pair : catalogue.algorithm_pairs[i]) tried[pair] = true;
  }
  // The untried pairs, in catalogue order.
  std::vector<int> untried;
  std::vector<bool> listed(catalogue.num_algorithm_pairs, false);
  for (int i = 0; i < n; ++i) {
    if (!unheld[i]) continue;
    for (int pair : catalogue.algorithm_pairs[i]) {
      if (!tried[pair] && !listed[pair]) {
        listed[pair] = true;
        untried.push_back(pair);
      }
    }
  }
  std::vector<int> rows;
  if (untried.empty()) return rows;
  const int drawn = untried[space::UniformIndex(rng, untried.size())];
  for (int i = 0; i < n; ++i) {
    const std::vector<int>& pairs = catalogue.algorithm_pairs[i];
    if (unheld[i] &&
        std::find(pairs.begin(), pairs.end(), drawn) != pairs.end()) {
      rows.push_back(i);
    }
  }
  return rows;
}

namespace {

// steps.fit on `data`, drawing from `rng`, with what it read and drew.
std::shared_ptr<PreparedSurrogate> FitNow(const TrainingData& data,
                                          space::Rng& rng,
                                          const SurrogateSuggestSteps& steps) {
  auto fit = std::make_shared<PreparedSurrogate>();
  fit->producer = steps.producer;
  fit->rng_before = rng;
  fit->fitted = steps.fit(data, rng, &fit->update);
  fit->rng_after = rng;
  fit->drew = !(fit->rng_after == fit->rng_before);
  fit->X = data.X;
  fit->y = data.y;
  return fit;
}

void Append(std::vector<v1::Configuration> more,
            std::vector<v1::Configuration>& out) {
  for (v1::Configuration& c : more) out.push_back(std::move(c));
}

// With ParEGO: draws the step's weight vector from `rng` into `parego` and
// replaces `data` by the observations' scalarised values.
void UseParegoTargets(const StudyView& study, const space::Encoder& encoder,
                      space::Rng& rng, std::optional<ParegoTargets>& parego,
                      TrainingData& data) {
  if (!UsesParego(*study.spec)) return;
  parego = DrawParegoTargets(study, rng);
  data = CollectTrainingData(study, encoder, &parego->values);
}

// EI picks under `fitted`, with the study's pending trials and `picks` as
// fantasies (`parego`: the values `data` holds, with ParEGO).
absl::StatusOr<std::vector<v1::Configuration>> ExpectedImprovementPicks(
    const StudyView& study, const std::vector<v1::Configuration>& picks,
    const SurrogateSuggestSteps& steps, const TrainingData& data,
    const std::optional<ParegoTargets>& parego, const PreparedSurrogate& fit,
    int count, space::Rng& rng) {
  const FittedSurrogate& fitted = *fit.fitted;
  Eigen::MatrixXd pending = PendingInputs(study, picks, *steps.encoder);
  if (fitted.inputs != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(pending, fitted.inputs(pending));
  }
  std::unique_ptr<const surrogate::Surrogate> fantasised;
  const surrogate::Surrogate* model = fitted.model.get();
  if (pending.rows() > 0) {
    METAOPT_ASSIGN_OR_RETURN(fantasised, fitted.model->WithFantasies(pending));
    model = fantasised.get();
  }
  HeldConfigurations held(study);
  held.Add(picks);
  auto is_held = [&held](const std::string& key) { return held.contains(key); };
  // The incumbent of the minimised objective (data.y is Minimized), or with
  // several objectives or constraints the Pareto acquisition.
  std::unique_ptr<const acquisition::AcquisitionFunction> owned;
  const space::Encoder& encoder = *steps.encoder;
  const InputsOf inputs_of = [&](const std::vector<v1::Configuration>& c)
      -> absl::StatusOr<Eigen::MatrixXd> {
    Eigen::MatrixXd X = encoder.EncodeBatch(c);
    if (fitted.inputs == nullptr) return X;
    return fitted.inputs(X);
  };
  if (parego.has_value()) {
    METAOPT_ASSIGN_OR_RETURN(
        owned, ParegoStepAcquisition(study, *parego, inputs_of, pending, rng));
  } else if (SeveralOutputs(*study.spec)) {
    METAOPT_ASSIGN_OR_RETURN(
        owned, ParetoStepAcquisition(study, inputs_of, pending, rng,
                                     fitted.output_priors,
                                     fitted.log_positive_objectives));
  } else {
    owned = std::make_unique<acquisition::LogExpectedImprovementFunction>(
        data.y.minCoeff());
  }
  const acquisition::AcquisitionFunction& log_ei = *owned;
  if (fitted.catalogue != nullptr && steps.untried_algorithms_first &&
      study.spec->objectives_size() > 1) {
    // One pick (SuggestWithSurrogate asks again for the rest of a batch).
    const std::vector<int> rows =
        RowsOfAnUntriedAlgorithm(*fitted.catalogue, is_held, rng);
    if (!rows.empty()) {
      METAOPT_ASSIGN_OR_RETURN(
          std::vector<int> best,
          acquisition::MaximizeOverCatalogue(*model, *fitted.catalogue, rows,
                                             is_held, log_ei, 1));
      std::vector<v1::Configuration> out;
      for (int row : best) out.push_back(study.spec->candidates(row));
      return out;
    }
  }
  if (fitted.catalogue != nullptr) {
    // Without pending trials the first pick screens the unheld rows under the
    // fitted model: a prepared fit may have done it already (used only on
    // exactly the same rows, so the picks are the same).
    const acquisition::CatalogueScreen* screen =
        pending.rows() == 0 && fit.catalogue_screen.has_value()
            ? &*fit.catalogue_screen
            : nullptr;
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<int> rows,
        acquisition::MaximizeOverCatalogue(*model, *fitted.catalogue, is_held,
                                           log_ei, count, screen));
    std::vector<v1::Configuration> out;
    out.reserve(rows.size());
    for (int row : rows) out.push_back(study.spec->candidates(row));
    return out;
  }
  return acquisition::MaximizeOverSpace(*model, *study.space, *steps.encoder,
                                        is_held, log_ei, data.best_first, count,
                                        *steps.search, rng);
}

}  // namespace

bool PreparedSurrogate::Matches(uint64_t producer_id, const TrainingData& data,
                                const space::Rng& rng) const {
  return producer == producer_id && X.rows() == data.X.rows() &&
         X.cols() == data.X.cols() && y.size() == data.y.size() &&
         (!drew || rng_before == rng) && y == data.y && X == data.X;
}

absl::StatusOr<std::shared_ptr<const PreparedFit>> PrepareSurrogate(
    const StudyView& study, const space::Rng& rng,
    const SurrogateSuggestSteps& steps) {
  TrainingData data = CollectTrainingData(study, *steps.encoder);
  if (data.y.size() < steps.min_observations) return nullptr;
  space::Rng copy = rng;
  std::optional<ParegoTargets> parego;
  UseParegoTargets(study, *steps.encoder, copy, parego, data);
  if (data.y.size() < steps.min_observations) return nullptr;
  std::shared_ptr<PreparedSurrogate> fit = FitNow(data, copy, steps);
  if (fit->fitted.ok() && fit->fitted->catalogue != nullptr) {
    HeldConfigurations held(study);
    METAOPT_ASSIGN_OR_RETURN(
        fit->catalogue_screen,
        acquisition::ScreenCatalogue(
            *fit->fitted->model, *fit->fitted->catalogue,
            [&held](const std::string& key) { return held.contains(key); }));
  }
  return std::shared_ptr<const PreparedFit>(std::move(fit));
}

uint64_t NewPolicyInstanceId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

absl::StatusOr<SuggestResult> SuggestWithSurrogate(
    const StudyView& study, int count, space::Rng& rng,
    const SurrogateSuggestSteps& steps,
    const std::shared_ptr<const PreparedFit>& prepared) {
  SuggestResult result;
  std::vector<std::string> sources;
  auto finish = [&] {
    result.source = absl::StrCat(steps.name, "/", absl::StrJoin(sources, "+"));
    return result;
  };
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  const int design_left = static_cast<int>(
      std::clamp<int64_t>(steps.initial_trials - started, 0, count));
  // Zero-shot start: the portfolio.
  result.configurations = NextPortfolioEntries(
      study, *steps.portfolio, steps.portfolio_in_design ? design_left : count);
  if (!result.configurations.empty()) {
    sources.push_back(steps.portfolio_source.empty() ? "portfolio"
                                                     : steps.portfolio_source);
  }
  auto remaining = [&] {
    return count - static_cast<int>(result.configurations.size());
  };
  if (remaining() == 0) return finish();
  // `k` random configurations more, the step named `source`. With several
  // objectives a catalogue's structures are drawn uniformly first
  // (RandomPolicy::SampleStructures): the front runs across algorithms whose
  // entries the catalogue holds in very different numbers.
  auto add_random = [&](int k, const char* source) {
    HeldConfigurations held(study);
    held.Add(result.configurations);
    Append(study.spec->objectives_size() > 1
               ? RandomPolicy::SampleStructures(study, held, k, rng)
               : RandomPolicy::Sample(study, held, k, rng),
           result.configurations);
    sources.push_back(source);
  };

  // Initial design: random for its first trials, and whenever there are too
  // few observations for the surrogate.
  TrainingData data = CollectTrainingData(study, *steps.encoder);
  const int64_t n = data.y.size();
  int design = 0;
  if (n < steps.min_observations) {
    design = remaining();
  } else if (steps.random_design) {
    design = std::min(design_left, remaining());
  }
  if (design > 0) add_random(design, "initial-design");
  // (A catalogue that ran out leaves remaining() > 0 with nothing to add.)
  if (remaining() == 0 || n < steps.min_observations) return finish();
  std::optional<ParegoTargets> parego;
  if (UsesParego(*study.spec)) {
    UseParegoTargets(study, *steps.encoder, rng, parego, data);
    if (data.y.size() < steps.min_observations) {
      // Too few observations report every objective to scalarise.
      add_random(remaining(), "random");
      return finish();
    }
  }

  std::shared_ptr<const PreparedSurrogate> ahead =
      std::dynamic_pointer_cast<const PreparedSurrogate>(prepared);
  if (ahead != nullptr && ahead->Matches(steps.producer, data, rng)) {
    if (ahead->drew) rng = ahead->rng_after;
    result.used_prepared_fit = true;
  } else {
    ahead = FitNow(data, rng, steps);
  }
  result.fit = ahead;
  result.update = ahead->update;
  const absl::StatusOr<FittedSurrogate>& fitted = ahead->fitted;
  if (!fitted.ok()) {
    // A numerically hopeless model must not stall the study: fall back to
    // random search for this call and say so in the trials' metadata.
    LogWarning(absl::StrCat(steps.name, " surrogate failed (",
                            fitted.status().ToString(),
                            "); suggesting at random"));
    add_random(remaining(), "random-fallback");
    return finish();
  }
  // The picks may come one at a time (untried_algorithms_first): each with
  // the earlier ones as fantasies.
  while (remaining() > 0) {
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<v1::Configuration> picks,
        ExpectedImprovementPicks(study, result.configurations, steps, data,
                                 parego, *ahead, remaining(), rng));
    if (picks.empty()) break;
    Append(std::move(picks), result.configurations);
    if (!steps.untried_algorithms_first) break;
  }
  sources.push_back(AcquisitionName(*study.spec));
  return finish();
}

acquisition::SearchOptions WithStudySearchBudget(
    acquisition::SearchOptions search, const v1::StudySpec& spec) {
  if (spec.algorithm().acquisition_samples() > 0) {
    search.random_samples = spec.algorithm().acquisition_samples();
  }
  return search;
}

}  // namespace metaopt::policy
