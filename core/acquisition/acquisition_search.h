// The acquisition optimizer: maximises an acquisition function
// (acquisition_function.h; log-EI so far) under a surrogate over a catalogue
// or a search space (the model / acquisition / optimizer split of limbo). It
// knows configurations, encodings and keys, not studies: callers say which
// configurations are held.
#ifndef METAOPT_CORE_ACQUISITION_ACQUISITION_SEARCH_H_
#define METAOPT_CORE_ACQUISITION_ACQUISITION_SEARCH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/acquisition/acquisition_function.h"
#include "core/gp/catalogue_kernel_cache.h"
#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "core/surrogate/surrogate.h"
#include "metaopt/v1/study.pb.h"

namespace metaopt::acquisition {

// Which of the candidates with the same score wins.
enum class Ties {
  // The first.
  kFirst,
  // The one with the lower predicted mean, then the first: for a model whose
  // predictions can be deterministic (a random forest's), whose log-EI is then
  // -inf wherever it does not improve.
  kLowerMean,
};

// Budget of the search over a space (defaults: ~1,500 scored candidates per
// pick).
struct SearchOptions {
  // Samples of the space (500: level with 2,000 in search quality over
  // metaopt-bench's synthetic functions, at half the Suggest time of real
  // loops; docs/algorithms.md, GP, "Acquisition")...
  int random_samples = 500;
  // ...each drawn by `sample` (canonical configurations of the space); null:
  // space::SearchSpace::Sample, uniform over the space. (Mosaic's playouts
  // draw the completions of one pipeline structure.)
  std::function<v1::Configuration(space::Rng&)> sample;
  // The best observed configurations whose neighbourhoods are searched
  // (each is a candidate too, unless held)...
  int incumbents = 5;
  // ...with this many neighbours each (space::Encoder::Neighbor)...
  int neighbors_per_incumbent = 100;
  // ...at this step (standard deviation in the unit cube).
  double neighbor_step_sd = 0.1;
  // Replaces those neighbours of a configuration when set (canonical
  // configurations of the space; e.g. Mosaic's one-exchange neighbours, which
  // keep the structure a playout is restricted to).
  std::function<std::vector<v1::Configuration>(const v1::Configuration&,
                                               space::Rng&)>
      neighbors;
  // Hill climbing from each incumbent: each step adds the neighbourhood of
  // the current configuration to the candidates and moves to its best
  // neighbour if that improves on it, for at most this many neighbourhoods
  // (1: the incumbents' own).
  int incumbent_steps = 1;
  // The best few candidates are refined by local search: `refine_rounds`
  // rounds of `refine_neighbors` neighbours each, the step halving every round.
  int refine_top = 5;
  int refine_rounds = 3;
  int refine_neighbors = 30;
  Ties ties = Ties::kFirst;
};

// A study's candidate catalogue, encoded once (immutable, shared by the
// successive policies of a study). Row i of X is the model input of
// spec.candidates(i): its space::Encoder encoding, or features of it.
struct EncodedCatalogue {
  std::vector<std::string> keys;  // space::ConfigurationKey per candidate
  Eigen::MatrixXd X;
  // Per candidate, its (stage, algorithm) pairs as small integers: ids in
  // [0, num_algorithm_pairs), numbered in order of first appearance.
  std::vector<std::vector<int>> algorithm_pairs;
  int num_algorithm_pairs = 0;
  // What screens of X keep from one Suggest to the next
  // (Surrogate::PredictCatalogueScreening); shared by copies.
  std::shared_ptr<gp::CatalogueKernelCache> kernel_cache =
      std::make_shared<gp::CatalogueKernelCache>();
  // The same for the further outputs' models of a study with several
  // objectives or constraints (AcquisitionFunction::ScoreCatalogueBound).
  std::shared_ptr<OutputKernelCaches> output_kernel_caches =
      std::make_shared<OutputKernelCaches>();
};

// Null for a study without a catalogue. Fills every field.
std::shared_ptr<const EncodedCatalogue> EncodeCatalogue(
    const v1::StudySpec& spec, const space::Encoder& encoder);

// `catalogue`'s rows (keys, algorithm pairs) with other model inputs X (same
// rows, e.g. embeddings of them), and caches of their own.
std::shared_ptr<const EncodedCatalogue> WithInputs(
    const EncodedCatalogue& catalogue, Eigen::MatrixXd X);

// True for the space::ConfigurationKey of a configuration that must not be
// proposed (held by a trial, or picked earlier in the same call).
using HeldPredicate = absl::FunctionRef<bool(const std::string& key)>;

// Both searches rank by `acquisition` (for example log-EI, stable far in the
// tail, with the incumbent of the minimised objective) under `model`; pending
// trials should already be fantasised in `model`. Batches are greedy: after
// each pick the model is conditioned on a kriging-believer fantasy at that
// pick, so the picks spread out. No held configuration and no duplicate is
// returned. Ties go to the first candidate unless told otherwise (Ties); a NaN
// score never wins.

// The screen of a catalogue's unheld rows (Surrogate::PredictScreening of
// those rows, in catalogue order), computed ahead of the search that reads it.
struct CatalogueScreen {
  std::vector<int> rows;
  std::optional<gp::Prediction> bound;  // nullopt: the model does not screen
};

// Up to `count` rows of `catalogue` whose keys are not held, best first; fewer
// only when the catalogue runs out. `model` reads rows of catalogue.X.
// `screen`, if not null and computed (ScreenCatalogue) for the same model and
// exactly the same unheld rows, replaces the first pick's screening of them:
// the same values on the same input, so the same picks.
absl::StatusOr<std::vector<int>> MaximizeOverCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    HeldPredicate held, const AcquisitionFunction& acquisition, int count,
    const CatalogueScreen* screen = nullptr);

// The screen MaximizeOverCatalogue computes for its first pick.
absl::StatusOr<CatalogueScreen> ScreenCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    HeldPredicate held);

// The same over `rows` of the catalogue only, in their order (the first of
// tied rows is the earlier): e.g. the entries of one pipeline structure.
absl::StatusOr<std::vector<int>> MaximizeOverCatalogue(
    const surrogate::Surrogate& model, const EncodedCatalogue& catalogue,
    absl::Span<const int> rows, HeldPredicate held,
    const AcquisitionFunction& acquisition, int count,
    Ties ties = Ties::kFirst);

// `count` configurations of `space` (fewer only if a tiny space runs out):
// samples plus neighbours of `incumbents` (best first), the best few refined
// by local search. `encoder` gives the model's inputs (its ranges may
// differ from the space's: neighbours outside `space` are dropped).
absl::StatusOr<std::vector<v1::Configuration>> MaximizeOverSpace(
    const surrogate::Surrogate& model, const space::SearchSpace& space,
    const space::Encoder& encoder, HeldPredicate held,
    const AcquisitionFunction& acquisition,
    const std::vector<v1::Configuration>& incumbents, int count,
    const SearchOptions& options, space::Rng& rng);

}  // namespace metaopt::acquisition

#endif  // METAOPT_CORE_ACQUISITION_ACQUISITION_SEARCH_H_
