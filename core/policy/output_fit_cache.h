// The hyperparameter fits of the GPs that model a study's other objectives
// and constrained metrics (pareto_step.h), kept across Suggests. Such a fit
// is a function of its inputs alone (the kernel, the sample it is fitted on,
// the fit's seed and iterations), so a Suggest whose fit inputs equal an
// earlier one's reads the fitted model instead of fitting again: the same
// model, in any policy instance, and after a restart recomputed the same.
//
// Thread-safe.
#ifndef METAOPT_CORE_POLICY_OUTPUT_FIT_CACHE_H_
#define METAOPT_CORE_POLICY_OUTPUT_FIT_CACHE_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "Eigen/Core"
#include "core/common/mutex.h"
#include "core/gp/gaussian_process.h"

namespace metaopt::policy {

// What a fit reads.
struct OutputFitKey {
  std::string kernel;
  Eigen::MatrixXd X;
  Eigen::VectorXd y;
  uint64_t seed = 0;
  int iterations = 0;
};

class OutputFitCache {
 public:
  // The process's cache, of kCapacity fits (the least recently stored is
  // dropped first).
  static OutputFitCache& Global();

  // The model fitted for an equal key (every field equal, bit for bit).
  std::optional<gp::GaussianProcess> Find(const OutputFitKey& key) const;
  void Insert(OutputFitKey key, const gp::GaussianProcess& fitted);
  void Clear();

  // Enough for the other outputs (at most 2 + 16) of a few dozen studies.
  static constexpr size_t kCapacity = 256;

 private:
  struct Entry {
    uint64_t hash;
    OutputFitKey key;
    gp::GaussianProcess fitted;
  };
  mutable Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_OUTPUT_FIT_CACHE_H_
