// Acquisition maximisation over a study's space or catalogue.
#ifndef METAOPT_CORE_POLICY_ACQUISITION_SEARCH_H_
#define METAOPT_CORE_POLICY_ACQUISITION_SEARCH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/policy/policy.h"
#include "core/space/encoding.h"
#include "core/surrogate/surrogate.h"

namespace metaopt::policy {

// Budget of the acquisition search (defaults: ~3,000 scored candidates per
// pick in a continuous space).
struct AcquisitionSearchOptions {
  // Uniform samples of the space.
  int random_samples = 2000;
  // The best observed configurations whose neighbourhoods are sampled...
  int incumbents = 5;
  // ...with this many neighbours each (space::Encoder::Neighbor)...
  int neighbors_per_incumbent = 100;
  // ...at this step (standard deviation in the unit cube).
  double neighbor_step_sd = 0.1;
  // The best few candidates are refined by local search: `refine_rounds`
  // rounds of `refine_neighbors` neighbours each, the step halving every round.
  int refine_top = 5;
  int refine_rounds = 3;
  int refine_neighbors = 30;
};

// A study's candidate catalogue, encoded once (immutable, shared by the
// successive policies of a study). Row i of X encodes spec.candidates(i).
struct EncodedCatalogue {
  std::vector<std::string> keys;  // space::ConfigurationKey per candidate
  Eigen::MatrixXd X;
};

// Null for a study without a catalogue.
std::shared_ptr<const EncodedCatalogue> EncodeCatalogue(
    const v1::StudySpec& spec, const space::Encoder& encoder);

// Chooses up to `count` configurations by expected improvement (ranked by
// log-EI, stable far in the tail) under `model`, an objective to MINIMISE with
// incumbent value `best`. Batches are greedy: after each pick the model is
// conditioned on a kriging-believer fantasy at that pick, so the picks spread
// out. Pending trials should already be fantasised in `model`.
//
// Catalogue studies score every untried catalogue entry (`catalogue` must be
// the study's EncodedCatalogue); other studies score
// uniform samples plus neighbours of `incumbents` (best first) and refine the
// best few by local search. Configurations already held by a trial are never
// returned; neither are duplicates. Fewer than `count` are returned only when
// the catalogue runs out.
absl::StatusOr<std::vector<v1::Configuration>> ProposeByExpectedImprovement(
    const StudyView& study, const space::Encoder& encoder,
    const EncodedCatalogue* catalogue, const surrogate::Surrogate& model,
    double best, const std::vector<v1::Configuration>& incumbents, int count,
    const AcquisitionSearchOptions& options, space::Rng& rng);

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_ACQUISITION_SEARCH_H_
