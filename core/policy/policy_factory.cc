#include "core/policy/policy_factory.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/status_macros.h"
#include "core/policy/deeppipe_policy.h"
#include "core/policy/gp_policy.h"
#include "core/policy/grosi_policy.h"
#include "core/policy/mosaic_policy.h"
#include "core/policy/parego_step.h"
#include "core/policy/pmf_policy.h"
#include "core/policy/random_policy.h"
#include "core/registry/task_design.h"

namespace metaopt::policy {
namespace {

absl::StatusOr<std::shared_ptr<const Policy>> CreateRandom(
    const v1::StudySpec& spec, const v1::PolicyState&,
    std::shared_ptr<const registry::LoadedModel> model) {
  if (model == nullptr) return std::make_shared<const RandomPolicy>();
  METAOPT_ASSIGN_OR_RETURN(space::SearchSpace space,
                           space::SearchSpace::Create(spec.search_space()));
  return std::make_shared<const RandomPolicy>(
      ZeroShotDesignForStudy(&model->artifact, spec, space));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreateGp(
    const v1::StudySpec& spec, const v1::PolicyState& state,
    std::shared_ptr<const registry::LoadedModel> model) {
  std::optional<v1::GpPolicyState> gp_state;
  if (state.has_gp()) gp_state = state.gp();
  return GpPolicy::Create(spec, std::move(gp_state), std::move(model));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreateDeepPipe(
    const v1::StudySpec& spec, const v1::PolicyState& state,
    std::shared_ptr<const registry::LoadedModel> model) {
  std::optional<v1::DeepPipePolicyState> deeppipe_state;
  if (state.has_deeppipe()) deeppipe_state = state.deeppipe();
  return DeepPipePolicy::Create(spec, std::move(deeppipe_state),
                                std::move(model));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreatePmf(
    const v1::StudySpec& spec, const v1::PolicyState& state,
    std::shared_ptr<const registry::LoadedModel> model) {
  std::optional<v1::PmfPolicyState> pmf_state;
  if (state.has_pmf()) pmf_state = state.pmf();
  return PmfPolicy::Create(spec, std::move(pmf_state), std::move(model));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreateMosaic(
    const v1::StudySpec& spec, const v1::PolicyState& state,
    std::shared_ptr<const registry::LoadedModel> model) {
  std::optional<v1::MosaicPolicyState> mosaic_state;
  if (state.has_mosaic()) mosaic_state = state.mosaic();
  return MosaicPolicy::Create(spec, std::move(mosaic_state), std::move(model));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreateGrosi(
    const v1::StudySpec& spec, const v1::PolicyState&,
    std::shared_ptr<const registry::LoadedModel> model) {
  // Refitted from the meta-learned model at every Suggest: no state.
  return GrosiPolicy::Create(spec, std::move(model));
}

absl::StatusOr<std::shared_ptr<const Policy>> CreateFsbo(
    const v1::StudySpec& spec, const v1::PolicyState& state,
    std::shared_ptr<const registry::LoadedModel> model) {
  if (model == nullptr || model->artifact.kind() != v1::MODEL_KIND_FSBO) {
    return absl::FailedPreconditionError(absl::StrCat(
        "FSBO needs a MODEL_KIND_FSBO registry model over this space; ",
        model == nullptr
            ? std::string("none matches")
            : absl::StrCat("the study's model ", model->reference(), " is ",
                           v1::ModelKind_Name(model->artifact.kind())),
        ": train one with `metaopt-train --kind fsbo`, publish it in the "
        "server's registry, or name one in spec.algorithm.model"));
  }
  // The same persisted state as DeepPipe's (FineTune's base parameters).
  std::optional<v1::DeepPipePolicyState> deeppipe_state;
  if (state.has_deeppipe()) deeppipe_state = state.deeppipe();
  return DeepPipePolicy::Create(spec, std::move(deeppipe_state),
                                std::move(model), FsboPolicyOptions());
}

using DeepPipeUse = BindingRules::DeepPipeUse;

// Every model kind carries a portfolio, so a kind that needs nothing else
// takes any; a GROSI model binds other kinds only by name (its portfolio is
// its data's portfolio model's, which also carries the task-aware design), as
// does an FSBO model (its portfolio is the 5-setting evolutionary warm start,
// not the data's default portfolio).
constexpr BindingRules::ModelKinds kAllButGrosi =
    BindingRules::Set({v1::MODEL_KIND_PORTFOLIO, v1::MODEL_KIND_DEEPPIPE,
                  v1::MODEL_KIND_PMF});

BindingRules RandomBinding(const v1::AlgorithmSpec&) {
  // Named models only (for their portfolio): the baseline stays a baseline.
  return BindingRules();
}

BindingRules GpBinding(const v1::AlgorithmSpec&) {
  BindingRules rules;
  rules.binds_by_itself = kAllButGrosi;
  return rules;
}

BindingRules DeepPipeBinding(const v1::AlgorithmSpec&) {
  BindingRules rules;
  // A portfolio-only model gives a scratch DeepPipe its warm start.
  rules.accepts = BindingRules::Set({v1::MODEL_KIND_DEEPPIPE,
                                v1::MODEL_KIND_PORTFOLIO});
  rules.binds_by_itself = BindingRules::Set({v1::MODEL_KIND_DEEPPIPE});
  rules.learns_from_model = true;
  rules.deeppipe_use = DeepPipeUse::kLearnsEncoders;
  return rules;
}

BindingRules PmfBinding(const v1::AlgorithmSpec&) {
  BindingRules rules;
  rules.accepts = rules.binds_by_itself = BindingRules::Set({v1::MODEL_KIND_PMF});
  rules.learns_from_model = true;
  return rules;
}

BindingRules MosaicBinding(const v1::AlgorithmSpec& algorithm) {
  BindingRules rules;
  if (algorithm.mosaic().surrogate() == v1::MOSAIC_SURROGATE_DEEPPIPE) {
    rules.binds_by_itself = BindingRules::Set({v1::MODEL_KIND_DEEPPIPE});
    rules.deeppipe_use = DeepPipeUse::kKernelOnly;
    rules.kernel_only_reason =
        "Mosaic's DeepPipe surrogate fine-tunes the kernel only and cannot "
        "learn a new algorithm's encoder; use ALGORITHM_KIND_DEEPPIPE";
  } else {
    rules.binds_by_itself = kAllButGrosi;
  }
  return rules;
}

BindingRules FsboBinding(const v1::AlgorithmSpec&) {
  BindingRules rules;
  rules.accepts = rules.binds_by_itself =
      BindingRules::Set({v1::MODEL_KIND_FSBO});
  rules.learns_from_model = true;
  return rules;
}

BindingRules GrosiBinding(const v1::AlgorithmSpec&) {
  BindingRules rules;
  rules.accepts = rules.binds_by_itself = BindingRules::Set({v1::MODEL_KIND_GROSI});
  rules.learns_from_model = true;
  return rules;
}

// The table. Several objectives and constraints go through the Pareto
// acquisition (pareto_step.h): GP and DeepPipe in the surrogate-based Suggest
// (model_based.h), PMF over its latent rows. ParEGO (parego_step.h) hands a
// scalarised objective to GP's and DeepPipe's surrogate and to Mosaic's tree
// and playouts (PMF's latent rows come from the meta-dataset's y, which a
// scalarised value is not). Mosaic's playouts weigh EI by each constrained
// metric's probability of feasibility (MosaicSearch::SetConstraints).
constexpr AlgorithmKindDescriptor kKinds[] = {
    // kind, create, models_encoded_space, ehvi, parego, constraints,
    // catalogue_from_model, binding
    {v1::ALGORITHM_KIND_RANDOM, &CreateRandom, false, true, true, true, false,
     &RandomBinding},
    {v1::ALGORITHM_KIND_GP, &CreateGp, true, true, true, true, false,
     &GpBinding},
    {v1::ALGORITHM_KIND_DEEPPIPE, &CreateDeepPipe, true, true, true, true,
     false, &DeepPipeBinding},
    {v1::ALGORITHM_KIND_PMF, &CreatePmf, false, true, false, true, true,
     &PmfBinding},
    {v1::ALGORITHM_KIND_MOSAIC, &CreateMosaic, true, false, true, true, false,
     &MosaicBinding},
    {v1::ALGORITHM_KIND_GROSI, &CreateGrosi, true, false, false, false, false,
     &GrosiBinding},
    // The paper's single objective, unconstrained.
    {v1::ALGORITHM_KIND_FSBO, &CreateFsbo, true, false, false, false, false,
     &FsboBinding},
};

std::string KindNames(bool (*accepts)(const AlgorithmKindDescriptor&)) {
  std::vector<std::string> names;
  for (const AlgorithmKindDescriptor& d : kKinds) {
    if (accepts(d)) names.push_back(v1::AlgorithmKind_Name(d.kind));
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

absl::Span<const AlgorithmKindDescriptor> AlgorithmKinds() { return kKinds; }

absl::StatusOr<const AlgorithmKindDescriptor*> FindAlgorithmKind(
    v1::AlgorithmKind kind) {
  for (const AlgorithmKindDescriptor& d : kKinds) {
    if (d.kind == kind) return &d;
  }
  if (kind == v1::ALGORITHM_KIND_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.algorithm.kind: ALGORITHM_KIND_UNSPECIFIED; set one of ",
        KindNames([](const AlgorithmKindDescriptor&) { return true; })));
  }
  return absl::UnimplementedError(absl::StrCat(
      "spec.algorithm.kind: ",
      v1::AlgorithmKind_IsValid(kind) ? v1::AlgorithmKind_Name(kind)
                                      : absl::StrCat(static_cast<int>(kind)),
      " is not implemented by this server yet"));
}

absl::Status CheckAlgorithmSupported(const v1::AlgorithmSpec& algorithm) {
  return FindAlgorithmKind(algorithm.kind()).status();
}

absl::Status CheckObjectivesSupported(const v1::StudySpec& spec) {
  METAOPT_ASSIGN_OR_RETURN(const AlgorithmKindDescriptor* d,
                           FindAlgorithmKind(spec.algorithm().kind()));
  const std::string kind = v1::AlgorithmKind_Name(d->kind);
  const v1::MultiObjectiveAcquisition set =
      spec.algorithm().multi_objective_acquisition();
  if (!v1::MultiObjectiveAcquisition_IsValid(set)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.algorithm.multi_objective_acquisition: ", static_cast<int>(set),
        " is not a MultiObjectiveAcquisition; set "
        "MULTI_OBJECTIVE_ACQUISITION_EHVI or "
        "MULTI_OBJECTIVE_ACQUISITION_PAREGO (or leave it unset)"));
  }
  if (!v1::OutputWarping_IsValid(spec.algorithm().output_warping())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.algorithm.output_warping: ",
        static_cast<int>(spec.algorithm().output_warping()),
        " is not an OutputWarping; set OUTPUT_WARPING_NONE or "
        "OUTPUT_WARPING_POWER (or leave it unset)"));
  }
  if (spec.objectives_size() > 1 && !d->ehvi && !d->parego) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.objectives: ", spec.objectives_size(), " objectives; ", kind,
        " optimizes one; for several use one of ",
        KindNames([](const AlgorithmKindDescriptor& k) {
          return k.ehvi || k.parego;
        })));
  }
  if (spec.objectives_size() > 1) {
    const v1::MultiObjectiveAcquisition used =
        MultiObjectiveAcquisitionOf(spec.algorithm());
    if (used == v1::MULTI_OBJECTIVE_ACQUISITION_EHVI && !d->ehvi) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.algorithm.multi_objective_acquisition: "
          "MULTI_OBJECTIVE_ACQUISITION_EHVI: ",
          kind,
          " takes several objectives by ParEGO only; set "
          "MULTI_OBJECTIVE_ACQUISITION_PAREGO (or leave it unset), or use "
          "one of ",
          KindNames([](const AlgorithmKindDescriptor& k) { return k.ehvi; })));
    }
    if (used == v1::MULTI_OBJECTIVE_ACQUISITION_PAREGO && !d->parego) {
      return absl::InvalidArgumentError(absl::StrCat(
          "spec.algorithm.multi_objective_acquisition: "
          "MULTI_OBJECTIVE_ACQUISITION_PAREGO: ",
          kind,
          " takes several objectives by EHVI only; set "
          "MULTI_OBJECTIVE_ACQUISITION_EHVI (or leave it unset), or use one "
          "of ",
          KindNames(
              [](const AlgorithmKindDescriptor& k) { return k.parego; })));
    }
  }
  if (spec.constraints_size() > 0 && !d->constraints) {
    return absl::InvalidArgumentError(absl::StrCat(
        "spec.constraints: ", kind, " does not take constraints; use one of ",
        KindNames([](const AlgorithmKindDescriptor& k) {
          return k.constraints;
        })));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Policy>> CreatePolicy(
    const v1::StudySpec& spec, const std::optional<std::string>& stored_state,
    std::shared_ptr<const registry::LoadedModel> model) {
  METAOPT_ASSIGN_OR_RETURN(const AlgorithmKindDescriptor* d,
                           FindAlgorithmKind(spec.algorithm().kind()));
  if (model != nullptr && model->artifact.has_task_design()) {
    // A design that reads the dataset sample needs one (ZeroShotDesign).
    METAOPT_RETURN_IF_ERROR(registry::CheckDesignInput(model->artifact, spec));
  }
  v1::PolicyState state;
  if (stored_state.has_value() && !state.ParseFromString(*stored_state)) {
    return absl::DataLossError("stored policy state does not parse");
  }
  return d->create(spec, state, std::move(model));
}

}  // namespace metaopt::policy
