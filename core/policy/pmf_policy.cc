#include "core/policy/pmf_policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/acquisition/acquisition_search.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/gp/lbfgs.h"
#include "core/objective/objective.h"
#include "core/policy/pareto_step.h"

namespace metaopt::policy {

struct PmfPolicy::Shared {
  v1::Goal goal = v1::GOAL_MINIMIZE;
  std::shared_ptr<const registry::LoadedModel> model;
  // The model as trained (FineTune's prior is centred on its parameters).
  std::shared_ptr<const surrogate::PmfModel> trained;
  // The catalogue canonicalized in the study's space, and its keys.
  std::vector<v1::Configuration> catalogue;
  absl::flat_hash_map<std::string, int> index_by_key;
  std::vector<int> candidates;
  std::vector<int> warm_start;
  std::string warm_start_source;
  // Row i: the latent row of catalogue entry candidates[i], and its key.
  acquisition::EncodedCatalogue latent_candidates;
  int initial_trials = 5;
  PmfPolicyOptions options;
};

namespace {

surrogate::PmfKernelParams FromLog(const Eigen::VectorXd& v) {
  const Eigen::Index q = v.size() - 2;
  return surrogate::PmfKernelParams::FromPositive(
      v.head(q).array().exp().matrix(), std::exp(v[q]), std::exp(v[q + 1]));
}

std::string ModelName(const registry::LoadedModel& model) {
  return model.reference();
}

}  // namespace

std::vector<int> NearestTrainingDatasets(
    const v1::ModelArtifact& artifact,
    const google::protobuf::Map<std::string, double>& features, int k) {
  // The query, standardised, over the features with a positive training
  // standard deviation.
  std::vector<std::pair<std::string, double>> query;
  for (const auto& [name, value] : features) {
    if (!std::isfinite(value)) continue;
    const auto mean = artifact.normalization().find("feature_mean/" + name);
    const auto sd = artifact.normalization().find("feature_std/" + name);
    if (mean == artifact.normalization().end() ||
        sd == artifact.normalization().end() || !(sd->second > 0)) {
      continue;
    }
    query.emplace_back(name, (value - mean->second) / sd->second);
  }
  std::vector<std::pair<double, int>> distances;
  for (int t = 0; t < artifact.training_features_size(); ++t) {
    const auto& train = artifact.training_features(t).features();
    double sum = 0.0;
    int shared = 0;
    for (const auto& [name, z] : query) {
      const auto it = train.find(name);
      if (it == train.end()) continue;
      const double mean = artifact.normalization().at("feature_mean/" + name);
      const double sd = artifact.normalization().at("feature_std/" + name);
      sum += std::abs((it->second - mean) / sd - z);
      ++shared;
    }
    if (shared > 0) distances.emplace_back(sum / shared, t);
  }
  std::stable_sort(distances.begin(), distances.end());
  std::vector<int> nearest;
  for (const auto& [distance, t] : distances) {
    if (static_cast<int>(nearest.size()) >= k) break;
    nearest.push_back(t);
  }
  return nearest;
}

std::vector<int> RankOrder(const registry::PmfRanks& ranks,
                           const std::vector<int>& tasks) {
  const int T = static_cast<int>(ranks.top_entries.size());
  const int N = static_cast<int>(ranks.mean_ranks.size());
  // Position of each entry in each task's list (its length when absent),
  // averaged.
  std::vector<double> local(N, 0.0);
  for (int t : tasks) {
    if (t < 0 || t >= T) continue;
    const std::vector<int>& top = ranks.top_entries[t];
    std::vector<double> position(N, static_cast<double>(top.size()));
    for (size_t k = 0; k < top.size(); ++k) {
      if (top[k] >= 0) position[top[k]] = static_cast<double>(k);
    }
    for (int n = 0; n < N; ++n) local[n] += position[n];
  }
  std::vector<int> order(N);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (local[a] != local[b]) return local[a] < local[b];
    return ranks.mean_ranks[a] < ranks.mean_ranks[b];
  });
  return order;
}

absl::StatusOr<std::shared_ptr<const PmfPolicy>> PmfPolicy::Create(
    const v1::StudySpec& spec, std::optional<v1::PmfPolicyState> state,
    std::shared_ptr<const registry::LoadedModel> model,
    PmfPolicyOptions options) {
  if (model == nullptr) {
    return absl::FailedPreconditionError(
        "PMF needs a registry model over this space; none matches: train one "
        "with `metaopt-train --kind pmf`, publish it in the server's "
        "registry, or name one in spec.algorithm.model");
  }
  const v1::ModelArtifact& artifact = model->artifact;
  if (artifact.kind() != v1::MODEL_KIND_PMF) {
    return absl::FailedPreconditionError(absl::StrCat(
        "PMF needs a MODEL_KIND_PMF registry model; the study's model ",
        ModelName(*model), " is ", v1::ModelKind_Name(artifact.kind()),
        " (name a PMF model in spec.algorithm.model)"));
  }
  if (model->servable.pmf == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", ModelName(*model), " carries no decoded PMF model"));
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  auto shared = std::make_shared<Shared>();
  shared->goal = spec.objective().goal();
  shared->model = model;
  shared->trained = model->servable.pmf;
  shared->options = options;
  shared->initial_trials = spec.algorithm().initial_trials() > 0
                               ? spec.algorithm().initial_trials()
                               : options.initial_trials;
  shared->catalogue.reserve(artifact.catalogue_size());
  for (int n = 0; n < artifact.catalogue_size(); ++n) {
    auto canonical = space.Canonicalize(artifact.catalogue(n), "catalogue");
    if (!canonical.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model ", ModelName(*model), ": catalogue[", n,
          "] does not fit the study's space: ", canonical.status().message()));
    }
    shared->index_by_key.emplace(space::ConfigurationKey(*canonical), n);
    shared->catalogue.push_back(*std::move(canonical));
  }

  // The candidates: spec.candidates (a subset of the catalogue) or all of it.
  if (spec.candidates().empty()) {
    shared->candidates.resize(shared->catalogue.size());
    std::iota(shared->candidates.begin(), shared->candidates.end(), 0);
  } else {
    absl::flat_hash_set<int> seen;
    for (int i = 0; i < spec.candidates_size(); ++i) {
      const auto it = shared->index_by_key.find(
          space::ConfigurationKey(spec.candidates(i)));
      if (it == shared->index_by_key.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "spec.candidates[", i, "]: {",
            spec.candidates(i).ShortDebugString(),
            "} is not in the catalogue of model ", ModelName(*model), " (",
            shared->catalogue.size(),
            " entries); a PMF study runs over its model's catalogue (omit "
            "spec.candidates for all of it)"));
      }
      if (seen.insert(it->second).second) {
        shared->candidates.push_back(it->second);
      }
    }
  }

  // The warm-start order.
  absl::flat_hash_set<int> is_candidate(shared->candidates.begin(),
                                        shared->candidates.end());
  std::vector<int> nearest;
  if (!spec.dataset_features().empty()) {
    nearest = NearestTrainingDatasets(artifact, spec.dataset_features(),
                                      options.warm_start_datasets);
  }
  std::vector<int> order;
  absl::flat_hash_set<int> in_order;
  auto add = [&](int n) {
    if (is_candidate.contains(n) && in_order.insert(n).second) {
      order.push_back(n);
    }
  };
  // A task-aware design (Metabu neighbours' best configurations) leads;
  // the L1 neighbours' rank order follows.
  const ZeroShotDesign design = ZeroShotDesignForStudy(&artifact, spec, space);
  if (design.source != "portfolio" && !design.configurations.empty()) {
    shared->warm_start_source = design.source;
    for (const v1::Configuration& entry : design.configurations) {
      const auto it = shared->index_by_key.find(space::ConfigurationKey(entry));
      if (it != shared->index_by_key.end()) add(it->second);
    }
  } else if (!nearest.empty()) {
    shared->warm_start_source = "warm-start-l1";
  } else {
    shared->warm_start_source = "portfolio";
    for (const v1::Configuration& entry : artifact.portfolio()) {
      auto canonical = space.Canonicalize(entry, "portfolio");
      if (!canonical.ok()) continue;
      const auto it =
          shared->index_by_key.find(space::ConfigurationKey(*canonical));
      if (it != shared->index_by_key.end()) add(it->second);
    }
  }
  if (model->servable.pmf_ranks != nullptr) {
    for (int n : RankOrder(*model->servable.pmf_ranks, nearest)) add(n);
  }
  for (int n : shared->candidates) add(n);  // without ranks: study order
  shared->warm_start = std::move(order);
  shared->latent_candidates.X = shared->trained->Rows(shared->candidates);
  for (int n : shared->candidates) {
    shared->latent_candidates.keys.push_back(
        space::ConfigurationKey(shared->catalogue[n]));
  }

  std::shared_ptr<const surrogate::PmfModel> current = shared->trained;
  if (state.has_value() && state->log_kernel_params_size() > 0) {
    const int expected = current->params().size();
    if (state->log_kernel_params_size() != expected) {
      return absl::DataLossError(absl::StrCat(
          "stored PMF policy state has ", state->log_kernel_params_size(),
          " kernel parameters; model ", ModelName(*model), " needs ",
          expected));
    }
    const Eigen::Map<const Eigen::VectorXd> stored(
        state->log_kernel_params().data(), expected);
    auto tuned = current->WithParams(FromLog(stored));
    if (!tuned.ok()) {
      return absl::DataLossError(
          absl::StrCat("stored PMF policy state: ", tuned.status().message()));
    }
    current = std::make_shared<const surrogate::PmfModel>(*std::move(tuned));
  } else {
    state = v1::PmfPolicyState();
  }
  return std::shared_ptr<const PmfPolicy>(
      new PmfPolicy(std::move(shared), std::move(current), *std::move(state)));
}

PmfPolicy::PmfPolicy(std::shared_ptr<const Shared> shared,
                     std::shared_ptr<const surrogate::PmfModel> pmf,
                     v1::PmfPolicyState state)
    : shared_(std::move(shared)),
      pmf_(std::move(pmf)),
      state_(std::move(state)),
      candidates_(shared_->candidates),
      warm_start_(shared_->warm_start),
      warm_start_source_(shared_->warm_start_source) {}

void PmfPolicy::CollectObservations(const StudyView& study,
                                    std::vector<int>* entries,
                                    Eigen::VectorXd* losses) const {
  std::vector<double> values;
  for (const v1::Trial& trial : *study.trials) {
    if (!IsObservation(trial)) {
      continue;
    }
    const auto it = shared_->index_by_key.find(
        space::ConfigurationKey(trial.configuration()));
    if (it == shared_->index_by_key.end()) continue;  // not in the catalogue
    entries->push_back(it->second);
    values.push_back(objective::Minimized(trial.value(), shared_->goal));
  }
  *losses = Eigen::Map<const Eigen::VectorXd>(
      values.data(), static_cast<Eigen::Index>(values.size()));
}

absl::StatusOr<SuggestResult> PmfPolicy::Suggest(const StudyView& study,
                                                 int count,
                                                 space::Rng& rng) const {
  const int n_catalogue = static_cast<int>(shared_->catalogue.size());
  std::vector<char> held(n_catalogue, 0);
  std::vector<int> pending;
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (!HoldsConfiguration(trial.state())) continue;
    ++started;
    const auto it = shared_->index_by_key.find(
        space::ConfigurationKey(trial.configuration()));
    if (it == shared_->index_by_key.end()) continue;
    held[it->second] = 1;
    if (trial.state() == v1::TRIAL_STATE_ACTIVE) pending.push_back(it->second);
  }
  std::vector<int> entries;
  Eigen::VectorXd losses;
  CollectObservations(study, &entries, &losses);

  SuggestResult result;
  std::vector<std::string> sources;
  std::vector<int> picks;
  auto pick = [&](int n) {
    held[n] = 1;
    picks.push_back(n);
  };
  auto take_warm_start = [&](int how_many) {
    int taken = 0;
    for (int n : warm_start_) {
      if (taken >= how_many) break;
      if (held[n]) continue;
      pick(n);
      ++taken;
    }
    return taken;
  };
  auto finish = [&] {
    for (int n : picks) result.configurations.push_back(shared_->catalogue[n]);
    result.source = "pmf/" + absl::StrJoin(sources, "+");
    return result;
  };

  const int warm =
      entries.empty()
          ? count
          : std::clamp<int>(static_cast<int>(std::min<int64_t>(
                                shared_->initial_trials - started, count)),
                            0, count);
  if (warm > 0 && take_warm_start(warm) > 0) {
    sources.push_back(warm_start_source_);
  }
  int remaining = count - static_cast<int>(picks.size());
  if (remaining == 0 || entries.empty()) return finish();

  absl::StatusOr<surrogate::PmfSurrogate> posterior =
      surrogate::PmfSurrogate::Create(pmf_, entries, losses);
  if (posterior.ok()) {
    std::vector<int> fantasies = pending;
    fantasies.insert(fantasies.end(), picks.begin(), picks.end());
    posterior = posterior->WithFantasyEntries(fantasies);
  }
  if (!posterior.ok()) {
    // A numerically hopeless posterior must not stall the study.
    LogWarning(absl::StrCat("PMF posterior failed (",
                            posterior.status().ToString(),
                            "); continuing the warm-start order"));
    if (take_warm_start(remaining) > 0) sources.push_back("fallback");
    return finish();
  }
  const double threshold =
      losses.minCoeff() - shared_->options.xi * pmf_->y_std();
  auto is_held = [&](const std::string& key) {
    return held[shared_->index_by_key.at(key)] != 0;
  };
  std::unique_ptr<const acquisition::AcquisitionFunction> acquisition;
  if (SeveralOutputs(*study.spec)) {
    // The other outputs' GPs read the entries' latent rows too.
    absl::flat_hash_map<int, int> row_of;
    for (size_t row = 0; row < candidates_.size(); ++row) {
      row_of[candidates_[row]] = static_cast<int>(row);
    }
    const Eigen::MatrixXd& latents = shared_->latent_candidates.X;
    const auto rows_of = [&](absl::Span<const int> entries) {
      Eigen::MatrixXd X(static_cast<Eigen::Index>(entries.size()),
                        latents.cols());
      for (size_t i = 0; i < entries.size(); ++i) {
        X.row(i) = latents.row(row_of.at(entries[i]));
      }
      return X;
    };
    const InputsOf inputs_of = [&](const std::vector<v1::Configuration>& c)
        -> absl::StatusOr<Eigen::MatrixXd> {
      std::vector<int> entries;
      for (const v1::Configuration& config : c) {
        entries.push_back(
            shared_->index_by_key.at(space::ConfigurationKey(config)));
      }
      return rows_of(entries);
    };
    std::vector<int> fantasies = pending;
    fantasies.insert(fantasies.end(), picks.begin(), picks.end());
    METAOPT_ASSIGN_OR_RETURN(
        acquisition,
        ParetoStepAcquisition(study, inputs_of, rows_of(fantasies), rng));
  } else {
    acquisition =
        std::make_unique<acquisition::LogExpectedImprovementFunction>(threshold);
  }
  METAOPT_ASSIGN_OR_RETURN(
      std::vector<int> rows,
      acquisition::MaximizeOverCatalogue(*posterior,
                                         shared_->latent_candidates, is_held,
                                         *acquisition, remaining));
  for (int row : rows) pick(candidates_[row]);
  if (!rows.empty()) sources.push_back(AcquisitionName(*study.spec));
  return finish();
}

absl::StatusOr<FineTuneResult> PmfPolicy::FineTune(
    const StudyView& study, const FineTuneOptions& options) const {
  std::vector<int> entries;
  Eigen::VectorXd losses;
  CollectObservations(study, &entries, &losses);
  if (entries.size() < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "FineTune needs at least 2 completed trials on catalogue entries; "
        "the study has ",
        entries.size()));
  }
  const Eigen::MatrixXd X = pmf_->Rows(entries);
  const Eigen::VectorXd t = (losses.array() - pmf_->y_mean()) / pmf_->y_std();
  const Eigen::VectorXd centre = shared_->trained->params().LogPositive();
  const double s2 = shared_->options.fine_tune_prior_log_std *
                    shared_->options.fine_tune_prior_log_std;
  const gp::ObjectiveFunction objective = [&](const Eigen::VectorXd& v,
                                              Eigen::VectorXd* gradient) {
    auto nll = surrogate::PmfNegativeLogLikelihood(X, t, FromLog(v), true);
    if (!nll.ok()) return std::numeric_limits<double>::quiet_NaN();
    const Eigen::VectorXd d = v - centre;
    *gradient = nll->grad_log_params + d / s2;
    return nll->value + 0.5 * d.squaredNorm() / s2;
  };
  const Eigen::VectorXd start = pmf_->params().LogPositive();
  Eigen::VectorXd unused(start.size());
  const double before = objective(start, &unused);
  gp::LbfgsOptions lbfgs;
  lbfgs.max_iterations =
      options.steps > 0 ? options.steps : shared_->options.fine_tune_iterations;
  lbfgs.time_budget = options.time_budget;
  lbfgs.gradient_tolerance = 1e-5;
  lbfgs.lower = centre.array() - 10.0;
  lbfgs.upper = centre.array() + 10.0;
  METAOPT_ASSIGN_OR_RETURN(gp::LbfgsResult fitted,
                           gp::MinimizeLbfgs(objective, start, lbfgs));
  METAOPT_ASSIGN_OR_RETURN(surrogate::PmfModel tuned,
                           pmf_->WithParams(FromLog(fitted.x)));
  v1::PmfPolicyState state;
  state.mutable_log_kernel_params()->Assign(fitted.x.data(),
                                            fitted.x.data() + fitted.x.size());
  state.set_fitted_observations(static_cast<int64_t>(entries.size()));
  v1::PolicyState wrapper;
  *wrapper.mutable_pmf() = state;
  FineTuneResult result;
  result.loss_before = before;
  result.loss_after = fitted.value;
  result.steps_run = fitted.iterations;
  result.update.policy = std::shared_ptr<const PmfPolicy>(new PmfPolicy(
      shared_, std::make_shared<const surrogate::PmfModel>(std::move(tuned)),
      std::move(state)));
  result.update.state = wrapper.SerializeAsString();
  return result;
}

}  // namespace metaopt::policy
