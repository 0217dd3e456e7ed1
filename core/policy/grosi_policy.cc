#include "core/policy/grosi_policy.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/nn/optimizer.h"
#include "core/policy/model_based.h"

namespace metaopt::policy {

struct GrosiPolicy::Shared {
  std::shared_ptr<const surrogate::GrosiModel> model;  // meta-learned
  Eigen::VectorXd z;    // the study's standardised meta-features
  Eigen::VectorXd phi;  // their embedding under the meta-learned model
  std::vector<std::string> imputed;
  std::shared_ptr<const acquisition::EncodedCatalogue> catalogue;
  std::vector<int> zero_shot_order;
  std::vector<v1::Configuration> portfolio;
  int initial_trials = 5;
  GrosiPolicyOptions options;
};

namespace {

// A constant latent variance: log-EI then ranks candidates by psi alone.
constexpr double kVariance = 1e-2;

// psi(x, phi) of a fixed model as a Surrogate over encoded configurations.
class PsiSurrogate final : public surrogate::Surrogate {
 public:
  PsiSurrogate(std::shared_ptr<const surrogate::GrosiModel> model,
               Eigen::VectorXd phi)
      : model_(std::move(model)), phi_(std::move(phi)) {}

  absl::StatusOr<gp::Prediction> Predict(
      const Eigen::MatrixXd& X) const override {
    gp::Prediction prediction;
    prediction.mean = model_->Predict(phi_, X);
    prediction.variance = Eigen::VectorXd::Constant(X.rows(), kVariance);
    return prediction;
  }
  // Top-X needs no fantasies: pending configurations are excluded as held.
  absl::StatusOr<std::unique_ptr<const Surrogate>> WithFantasies(
      const Eigen::MatrixXd&) const override {
    return std::unique_ptr<const Surrogate>(new PsiSurrogate(model_, phi_));
  }

 private:
  std::shared_ptr<const surrogate::GrosiModel> model_;
  Eigen::VectorXd phi_;
};

std::string KnownFeatures(const surrogate::GrosiModel& model) {
  constexpr int kShown = 5;
  std::vector<std::string> shown;
  for (int f = 0; f < std::min(kShown, model.num_features()); ++f) {
    shown.push_back(model.feature_names()[f]);
  }
  return absl::StrCat(model.num_features(), " (", absl::StrJoin(shown, ", "),
                      model.num_features() > kShown ? ", ...)" : ")");
}

// The `count` best configurations under `surrogate` that `held` does not
// contain: over the catalogue, or over the space.
absl::StatusOr<std::vector<v1::Configuration>> TopConfigurations(
    const StudyView& study, const surrogate::Surrogate& surrogate,
    const acquisition::EncodedCatalogue* catalogue,
    const space::Encoder& encoder, const HeldConfigurations& held,
    const std::vector<v1::Configuration>& incumbents, int count,
    const acquisition::SearchOptions& search, space::Rng& rng) {
  auto is_held = [&held](const std::string& key) { return held.contains(key); };
  constexpr double kBest = 0.0;  // any value: the ranking is by the mean
  const acquisition::LogExpectedImprovementFunction log_ei(kBest);
  if (catalogue != nullptr) {
    METAOPT_ASSIGN_OR_RETURN(std::vector<int> rows,
                             acquisition::MaximizeOverCatalogue(
                                 surrogate, *catalogue, is_held, log_ei, count));
    std::vector<v1::Configuration> out;
    for (int row : rows) out.push_back(study.spec->candidates(row));
    return out;
  }
  return acquisition::MaximizeOverSpace(surrogate, *study.space, encoder,
                                        is_held, log_ei, incumbents, count,
                                        search, rng);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const GrosiPolicy>> GrosiPolicy::Create(
    const v1::StudySpec& spec,
    std::shared_ptr<const registry::LoadedModel> model,
    GrosiPolicyOptions options) {
  options.search = WithStudySearchBudget(std::move(options.search), spec);
  if (model == nullptr) {
    return absl::FailedPreconditionError(
        "GROSI needs a MODEL_KIND_GROSI registry model over this space; none "
        "matches: train one with `metaopt-train --kind grosi`, publish it in "
        "the server's registry, or name one in spec.algorithm.model");
  }
  if (model->artifact.kind() != v1::MODEL_KIND_GROSI) {
    return absl::FailedPreconditionError(absl::StrCat(
        "GROSI needs a MODEL_KIND_GROSI registry model; the study's model ",
        model->reference(), " is ", v1::ModelKind_Name(model->artifact.kind()),
        " (name a GROSI model in spec.algorithm.model)"));
  }
  if (model->servable.grosi == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", model->reference(), " carries no decoded GROSI model"));
  }
  const bool reads_sample = model->servable.grosi->dataset2vec() != nullptr;
  if (spec.dataset_features().empty() && !reads_sample) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.dataset_features: empty; ALGORITHM_KIND_GROSI conditions its "
        "surrogate on the dataset's meta-features, so give those the GROSI "
        "model was trained with (the names of its meta-dataset's "
        "metafeatures.csv)",
        spec.has_dataset_sample()
            ? absl::StrCat("; model ", model->reference(),
                           " reads no dataset_sample (it has no Dataset2Vec "
                           "extractor)")
            : ""));
  }
  auto shared = std::make_shared<Shared>();
  shared->model = model->servable.grosi;
  const surrogate::GrosiModel& psi = *shared->model;
  const Eigen::VectorXd engineered =
      psi.Standardize(spec.dataset_features(), &shared->imputed);
  if (psi.num_features() > 0 && !spec.dataset_features().empty() &&
      static_cast<int>(shared->imputed.size()) == psi.num_features()) {
    std::vector<std::string> given;
    for (const auto& [name, value] : spec.dataset_features()) {
      given.push_back(name);
    }
    std::sort(given.begin(), given.end());
    if (given.size() > 5) given.resize(5);
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.dataset_features: none of the ", spec.dataset_features().size(),
        " given names (", absl::StrJoin(given, ", "),
        spec.dataset_features().size() > 5 ? ", ..." : "",
        ") is a meta-feature of model ", model->reference(),
        " with a finite value; it was trained with ", KnownFeatures(psi)));
  }
  std::optional<surrogate::RawSample> sample;
  if (reads_sample && spec.has_dataset_sample()) {
    absl::StatusOr<surrogate::RawSample> raw =
        surrogate::RawSampleFromProto(spec.dataset_sample());
    if (!raw.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.", raw.status().message()));
    }
    sample = *std::move(raw);
  }
  shared->z = psi.Input(engineered, sample.has_value() ? &*sample : nullptr);
  shared->phi = psi.Embed(shared->z);
  shared->catalogue = acquisition::EncodeCatalogue(spec, psi.encoder());
  if (shared->catalogue != nullptr) {
    const Eigen::VectorXd predicted =
        psi.Predict(shared->phi, shared->catalogue->X);
    shared->zero_shot_order.resize(predicted.size());
    std::iota(shared->zero_shot_order.begin(), shared->zero_shot_order.end(),
              0);
    std::stable_sort(shared->zero_shot_order.begin(),
                     shared->zero_shot_order.end(),
                     [&](int a, int b) { return predicted[a] < predicted[b]; });
  }
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  shared->portfolio = PortfolioForStudy(&model->artifact, spec, space);
  shared->initial_trials = spec.algorithm().initial_trials() > 0
                               ? spec.algorithm().initial_trials()
                               : options.initial_trials;
  shared->options = std::move(options);
  return std::shared_ptr<const GrosiPolicy>(new GrosiPolicy(std::move(shared)));
}

const std::vector<std::string>& GrosiPolicy::imputed_features() const {
  return shared_->imputed;
}

const std::vector<int>& GrosiPolicy::zero_shot_order() const {
  return shared_->zero_shot_order;
}

absl::StatusOr<SuggestResult> GrosiPolicy::Suggest(const StudyView& study,
                                                   int count,
                                                   space::Rng& rng) const {
  const Shared& s = *shared_;
  const space::Encoder& encoder = s.model->encoder();
  SuggestResult result;
  std::vector<std::string> sources;
  int64_t started = 0;
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) ++started;
  }
  const TrainingData data = CollectTrainingData(study, encoder);
  const bool spread =
      data.y.size() >= 2 && data.y.maxCoeff() > data.y.minCoeff();
  const int zero_shot = spread ? static_cast<int>(std::clamp<int64_t>(
                                     s.initial_trials - started, 0, count))
                               : count;
  HeldConfigurations held(study);

  // 1. Zero-shot: the top of the meta-learned model's ranking.
  if (zero_shot > 0) {
    std::vector<v1::Configuration> picks;
    if (s.catalogue != nullptr) {
      for (int row : s.zero_shot_order) {
        if (static_cast<int>(picks.size()) >= zero_shot) break;
        if (!held.contains(s.catalogue->keys[row])) {
          picks.push_back(study.spec->candidates(row));
        }
      }
    } else {
      const PsiSurrogate surrogate(s.model, s.phi);
      METAOPT_ASSIGN_OR_RETURN(
          picks,
          TopConfigurations(study, surrogate, nullptr, encoder, held,
                            s.portfolio, zero_shot, s.options.search, rng));
    }
    held.Add(picks);
    for (v1::Configuration& c : picks) {
      result.configurations.push_back(std::move(c));
    }
    sources.push_back("zero-shot");
  }

  // 2. GROSI(+X): refit on the observations, draw from the top X.
  const int remaining = count - static_cast<int>(result.configurations.size());
  if (remaining > 0 && spread) {
    const double lo = data.y.minCoeff();
    const double hi = data.y.maxCoeff();
    const Eigen::VectorXd targets = (data.y.array() - lo) / (hi - lo);
    surrogate::GrosiModel refit = *s.model;
    Eigen::VectorXd params = refit.parameters();
    Eigen::VectorXd best_params = params;
    double best_loss = std::numeric_limits<double>::infinity();
    nn::Adam adam(static_cast<int>(params.size()));
    for (int step = 0; step <= s.options.refit_steps; ++step) {
      const surrogate::GrosiLoss loss =
          refit.RegressionLoss(s.z, data.X, targets);
      if (!std::isfinite(loss.value) || !loss.gradient.allFinite()) break;
      if (loss.value < best_loss) {
        best_loss = loss.value;
        best_params = params;
      }
      if (loss.value < s.options.refit_tolerance ||
          step == s.options.refit_steps) {
        break;
      }
      adam.Step(loss.gradient, s.options.refit_learning_rate, params);
      if (!refit.set_parameters(params).ok()) break;
    }
    METAOPT_RETURN_IF_ERROR(refit.set_parameters(best_params));
    auto refitted =
        std::make_shared<const surrogate::GrosiModel>(std::move(refit));
    const PsiSurrogate surrogate(refitted, refitted->Embed(s.z));
    const int top = std::max(s.options.top_x, remaining);
    METAOPT_ASSIGN_OR_RETURN(
        std::vector<v1::Configuration> candidates,
        TopConfigurations(study, surrogate, s.catalogue.get(), encoder, held,
                          data.best_first, top, s.options.search, rng));
    // A uniform draw of `remaining` of them, without replacement.
    for (int i = 0; i < remaining && i < static_cast<int>(candidates.size());
         ++i) {
      const size_t j = i + space::UniformIndex(
                               rng, candidates.size() - static_cast<size_t>(i));
      std::swap(candidates[i], candidates[j]);
      result.configurations.push_back(candidates[i]);
    }
    sources.push_back(absl::StrCat("refit-top", s.options.top_x));
  }
  result.source = absl::StrCat("grosi/", absl::StrJoin(sources, "+"));
  return result;
}

std::map<std::string, std::string> GrosiStudyMetadata(
    const v1::ModelArtifact& model, const v1::StudySpec& spec) {
  std::map<std::string, std::string> out;
  const auto d2v = model.int_options().find("dataset2vec");
  const bool reads_sample =
      d2v != model.int_options().end() && d2v->second == 1;
  // The artifact was validated when the registry loaded it.
  absl::StatusOr<surrogate::FeatureScaler> scaler =
      surrogate::FeatureScaler::ReadFrom(model.normalization());
  const bool engineered = scaler.ok() && !scaler->empty();
  out["task_conditioning"] =
      reads_sample ? (engineered ? "dataset2vec+meta-features" : "dataset2vec")
                   : "meta-features";
  if (reads_sample) {
    out["dataset_sample"] =
        spec.has_dataset_sample()
            ? "used"
            : "absent: the mean Dataset2Vec output of the training tasks "
              "stands in";
  } else if (spec.has_dataset_sample()) {
    out["dataset_sample"] = "ignored: the model has no Dataset2Vec extractor";
  }
  if (engineered) {
    std::vector<std::string> imputed;
    scaler->Standardize(spec.dataset_features(), &imputed);
    out["conditioning_imputed_features"] =
        imputed.empty() ? "none" : absl::StrJoin(imputed, ",");
  }
  return out;
}

}  // namespace metaopt::policy
