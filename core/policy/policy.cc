#include "core/policy/policy.h"

#include <algorithm>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/policy/grosi_policy.h"
#include "core/registry/task_design.h"
#include "core/space/encoding.h"
#include "core/surrogate/feature_scaler.h"

namespace metaopt::policy {

absl::StatusOr<FineTuneResult> Policy::FineTune(const StudyView& study,
                                                const FineTuneOptions&) const {
  return absl::FailedPreconditionError(absl::StrCat(
      "algorithm ", v1::AlgorithmKind_Name(study.spec->algorithm().kind()),
      " has no surrogate to fine-tune"));
}

absl::StatusOr<std::shared_ptr<const PreparedFit>> Policy::PrepareFit(
    const StudyView&, const space::Rng&) const {
  return nullptr;
}

absl::StatusOr<SuggestResult> Policy::SuggestPrepared(
    const StudyView& study, int count, space::Rng& rng,
    const std::shared_ptr<const PreparedFit>&) const {
  return Suggest(study, count, rng);
}

bool HoldsConfiguration(v1::TrialState state) {
  switch (state) {
    case v1::TRIAL_STATE_ACTIVE:
    case v1::TRIAL_STATE_COMPLETED:
    case v1::TRIAL_STATE_STOPPED:
    case v1::TRIAL_STATE_FAILED:
    case v1::TRIAL_STATE_INFEASIBLE:
      return true;
    default:
      return false;
  }
}

bool IsObservation(const v1::Trial& trial) {
  return (trial.state() == v1::TRIAL_STATE_COMPLETED ||
          trial.state() == v1::TRIAL_STATE_STOPPED) &&
         trial.has_value();
}

const HeldKeys& HeldConfigurationKeys(const StudyView& study,
                                      HeldKeys* scratch) {
  if (study.held_keys != nullptr) return *study.held_keys;
  scratch->clear();
  for (const v1::Trial& trial : *study.trials) {
    if (HoldsConfiguration(trial.state())) {
      ++(*scratch)[space::ConfigurationKey(trial.configuration())];
    }
  }
  return *scratch;
}

HeldConfigurations::HeldConfigurations(const StudyView& study)
    : keys_(&HeldConfigurationKeys(study, &scratch_)) {}

void HeldConfigurations::Add(const std::vector<v1::Configuration>& picks) {
  for (const v1::Configuration& c : picks) {
    picks_.insert(space::ConfigurationKey(c));
  }
}

std::vector<const v1::Configuration*> UntriedCandidates(
    const StudyView& study, const HeldConfigurations& held) {
  std::vector<const v1::Configuration*> untried;
  if (study.spec->candidates().empty()) return untried;
  const bool keyed = study.candidate_keys != nullptr &&
                     study.candidate_keys->size() ==
                         static_cast<size_t>(study.spec->candidates_size());
  untried.reserve(study.spec->candidates_size());
  for (int i = 0; i < study.spec->candidates_size(); ++i) {
    const v1::Configuration& candidate = study.spec->candidates(i);
    const bool tried = keyed
                           ? held.contains((*study.candidate_keys)[i])
                           : held.contains(space::ConfigurationKey(candidate));
    if (!tried) untried.push_back(&candidate);
  }
  return untried;
}

std::vector<const v1::Configuration*> UntriedCandidates(
    const StudyView& study) {
  if (study.spec->candidates().empty()) return {};
  const HeldConfigurations held(study);
  return UntriedCandidates(study, held);
}

ZeroShotDesign ZeroShotDesignForStudy(const v1::ModelArtifact* model,
                                      const v1::StudySpec& spec,
                                      const space::SearchSpace& space) {
  ZeroShotDesign design;
  if (model == nullptr) return design;
  std::vector<const v1::Configuration*> entries;
  size_t size = static_cast<size_t>(model->portfolio_size());
  absl::StatusOr<google::protobuf::Map<std::string, double>> features;
  if (model->has_task_design()) {
    features = registry::DesignFeatures(*model, spec);
  }
  if (model->has_task_design() && features.ok() && !features->empty()) {
    registry::DesignQuery query = registry::QueryTaskDesign(
        model->task_design(), *features, model->portfolio());
    entries = std::move(query.configurations);
    design.source = model->task_design().method();
    design.neighbours = std::move(query.neighbours);
    design.imputed_features = std::move(query.imputed_features);
    size =
        std::max(size, static_cast<size_t>(model->task_design().neighbours()));
  } else {
    design.source = "portfolio";
    for (const v1::Configuration& entry : model->portfolio()) {
      entries.push_back(&entry);
    }
  }
  absl::flat_hash_map<std::string, int> catalogue;
  for (int i = 0; i < spec.candidates_size(); ++i) {
    catalogue.emplace(space::ConfigurationKey(spec.candidates(i)), i);
  }
  // Encoded catalogue, built only if an entry must be matched by distance.
  std::optional<space::Encoder> encoder;
  Eigen::MatrixXd encoded;
  absl::flat_hash_set<std::string> seen;
  for (const v1::Configuration* entry : entries) {
    if (design.configurations.size() >= size) break;
    auto canonical = space.Canonicalize(*entry, "portfolio");
    if (!canonical.ok()) continue;
    std::string key = space::ConfigurationKey(*canonical);
    if (!catalogue.empty() && !catalogue.contains(key)) {
      // Not in this study's catalogue (e.g. meta-datasets sampled at random
      // per task): take the nearest catalogue entry in the encoded space.
      if (!encoder.has_value()) {
        encoder.emplace(space);
        encoded = encoder->EncodeBatch(std::vector<v1::Configuration>(
            spec.candidates().begin(), spec.candidates().end()));
      }
      const Eigen::RowVectorXd x = encoder->Encode(*canonical).transpose();
      Eigen::Index nearest = 0;
      (encoded.rowwise() - x).rowwise().squaredNorm().minCoeff(&nearest);
      *canonical = spec.candidates(static_cast<int>(nearest));
      key = space::ConfigurationKey(*canonical);
    }
    if (!seen.insert(std::move(key)).second) continue;
    design.configurations.push_back(*std::move(canonical));
  }
  return design;
}

std::vector<v1::Configuration> PortfolioForStudy(
    const v1::ModelArtifact* model, const v1::StudySpec& spec,
    const space::SearchSpace& space) {
  return ZeroShotDesignForStudy(model, spec, space).configurations;
}

std::map<std::string, std::string> ZeroShotDesign::Metadata() const {
  std::map<std::string, std::string> out;
  if (source.empty()) return out;
  out["zero_shot_design"] = source;
  if (source != "portfolio") {
    out["design_neighbours"] = absl::StrJoin(neighbours, ",");
    out["imputed_features"] = imputed_features.empty()
                                  ? "none"
                                  : absl::StrJoin(imputed_features, ",");
  }
  return out;
}

std::map<std::string, std::string> StudyMetadata(
    const v1::ModelArtifact& model, const v1::StudySpec& spec,
    const space::SearchSpace& space) {
  std::map<std::string, std::string> out =
      ZeroShotDesignForStudy(&model, spec, space).Metadata();
  const v1::AlgorithmKind kind = spec.algorithm().kind();
  const bool deeppipe_surrogate =
      kind == v1::ALGORITHM_KIND_DEEPPIPE ||
      (kind == v1::ALGORITHM_KIND_MOSAIC &&
       spec.algorithm().mosaic().surrogate() == v1::MOSAIC_SURROGATE_DEEPPIPE);
  if (model.kind() == v1::MODEL_KIND_GROSI &&
      kind == v1::ALGORITHM_KIND_GROSI) {
    for (auto& [key, value] : GrosiStudyMetadata(model, spec)) {
      out[key] = std::move(value);
    }
    return out;
  }
  if (model.kind() != v1::MODEL_KIND_DEEPPIPE || !deeppipe_surrogate) {
    return out;
  }
  // The artifact was validated when the registry loaded it.
  absl::StatusOr<surrogate::FeatureScaler> scaler =
      surrogate::FeatureScaler::ReadFrom(model.normalization());
  if (!scaler.ok() || scaler->empty()) return out;
  std::vector<std::string> imputed;
  scaler->Standardize(spec.dataset_features(), &imputed);
  out["task_conditioning"] = "meta-features";
  out["conditioning_imputed_features"] =
      imputed.empty() ? "none" : absl::StrJoin(imputed, ",");
  return out;
}

std::vector<v1::Configuration> NextPortfolioEntries(
    const StudyView& study, const std::vector<v1::Configuration>& portfolio,
    int count) {
  std::vector<v1::Configuration> next;
  if (portfolio.empty() || count <= 0) return next;
  HeldKeys scratch;
  const HeldKeys& held = HeldConfigurationKeys(study, &scratch);
  for (const v1::Configuration& entry : portfolio) {
    if (static_cast<int>(next.size()) >= count) break;
    if (!held.contains(space::ConfigurationKey(entry))) next.push_back(entry);
  }
  return next;
}

}  // namespace metaopt::policy
