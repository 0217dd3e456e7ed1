#include "core/meta_training/evolutionary_portfolio.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/space/random.h"

namespace metaopt::train {
namespace {

// Rejection draws tried before the linear scan in WeightedDraw.
constexpr int kMaxRejections = 64;

// F with unknown entries set to 1 (the regret of a set with no known member,
// so min with 1 changes nothing).
Eigen::MatrixXd Known(const Eigen::MatrixXd& regrets) {
  return regrets.unaryExpr([](double v) { return std::isnan(v) ? 1.0 : v; });
}

double LossOf(const Eigen::MatrixXd& table, const std::vector<int64_t>& members,
              Eigen::VectorXd& scratch) {
  scratch.setOnes(table.rows());
  for (int64_t j : members) scratch = scratch.cwiseMin(table.col(j));
  return scratch.sum();
}

bool Contains(const std::vector<int64_t>& set, int64_t j) {
  return std::find(set.begin(), set.end(), j) != set.end();
}

// Draws a column with probability proportional to its weight among those not
// in `excluded` (some column must be left). `cumulative[j]` is the sum of the
// weights of columns 0..j.
int64_t WeightedDraw(const std::vector<double>& cumulative,
                     const std::vector<int64_t>& excluded, space::Rng& rng) {
  const int64_t n = static_cast<int64_t>(cumulative.size());
  for (int attempt = 0; attempt < kMaxRejections; ++attempt) {
    const double u = space::Uniform01(rng) * cumulative.back();
    const int64_t j = std::min<int64_t>(
        std::upper_bound(cumulative.begin(), cumulative.end(), u) -
            cumulative.begin(),
        n - 1);
    if (!Contains(excluded, j)) return j;
  }
  // Nearly every weight is excluded: draw among the rest exactly.
  double total = 0;
  for (int64_t j = 0; j < n; ++j) {
    if (!Contains(excluded, j)) {
      total += cumulative[j] - (j > 0 ? cumulative[j - 1] : 0.0);
    }
  }
  double u = space::Uniform01(rng) * total;
  int64_t last = -1;
  for (int64_t j = 0; j < n; ++j) {
    if (Contains(excluded, j)) continue;
    last = j;
    u -= cumulative[j] - (j > 0 ? cumulative[j - 1] : 0.0);
    if (u < 0) return j;
  }
  return last;
}

// A kept set: its members sorted (for equality), its loss, and its order of
// creation (ties in loss go to the earlier).
struct Entry {
  std::vector<int64_t> members;
  double loss = 0;
  int64_t order = 0;
};

// The `capacity` best distinct sets seen, best first.
class Elite {
 public:
  explicit Elite(size_t capacity) : capacity_(capacity) {}

  // Returns true when `entry` became the best.
  bool Offer(Entry entry) {
    std::sort(entry.members.begin(), entry.members.end());
    for (const Entry& kept : entries_) {
      if (kept.members == entry.members) return false;
    }
    auto before = [](const Entry& a, const Entry& b) {
      return a.loss < b.loss || (a.loss == b.loss && a.order < b.order);
    };
    auto it = std::upper_bound(entries_.begin(), entries_.end(), entry, before);
    if (static_cast<size_t>(it - entries_.begin()) >= capacity_) return false;
    const bool best = it == entries_.begin();
    entries_.insert(it, std::move(entry));
    if (entries_.size() > capacity_) entries_.pop_back();
    return best;
  }

  const Entry& Uniform(space::Rng& rng) const {
    return entries_[space::UniformIndex(rng, entries_.size())];
  }
  const Entry& best() const { return entries_.front(); }

 private:
  size_t capacity_;
  std::vector<Entry> entries_;
};

// `members` reordered greedily (see the header).
std::vector<int64_t> GreedyOrder(const Eigen::MatrixXd& table,
                                 std::vector<int64_t> members) {
  std::sort(members.begin(), members.end());
  std::vector<int64_t> ordered;
  Eigen::VectorXd current = Eigen::VectorXd::Ones(table.rows());
  while (!members.empty()) {
    size_t best = 0;
    double best_sum = 0;
    double best_standalone = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      const double sum = current.cwiseMin(table.col(members[i])).sum();
      const double standalone = table.col(members[i]).sum();
      if (i == 0 || sum < best_sum ||
          (sum == best_sum && standalone < best_standalone)) {
        best = i;
        best_sum = sum;
        best_standalone = standalone;
      }
    }
    current = current.cwiseMin(table.col(members[best]));
    ordered.push_back(members[best]);
    members.erase(members.begin() + static_cast<std::ptrdiff_t>(best));
  }
  return ordered;
}

absl::Status Validate(const Eigen::MatrixXd& regrets, int size,
                      const EvolutionarySearch& search) {
  if (regrets.rows() == 0 || regrets.cols() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("regrets is ", regrets.rows(), " x ", regrets.cols(),
                     ": needs at least one task and one candidate"));
  }
  for (Eigen::Index j = 0; j < regrets.cols(); ++j) {
    for (Eigen::Index t = 0; t < regrets.rows(); ++t) {
      const double v = regrets(t, j);
      if (!std::isnan(v) && !(v >= 0 && v <= 1)) {
        return absl::InvalidArgumentError(
            absl::StrCat("regrets(", t, ", ", j, ") = ", v,
                         " must be in [0, 1] or NaN (unknown)"));
      }
    }
  }
  if (size < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("size ", size, " must be at least 1"));
  }
  if (search.steps < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps ", search.steps, " must be >= 0"));
  }
  if (search.population < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("population ", search.population, " must be at least 1"));
  }
  if (search.parents < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parents ", search.parents, " must be at least 1"));
  }
  if (!(search.mutation_probability >= 0 && search.mutation_probability <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat("mutation_probability ",
                                                   search.mutation_probability,
                                                   " must be in [0, 1]"));
  }
  if (search.progress_every < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "progress_every ", search.progress_every, " must be at least 1"));
  }
  const int64_t set_size = std::min<int64_t>(size, regrets.cols());
  for (size_t i = 0; i < search.initial_sets.size(); ++i) {
    std::vector<int64_t> set = search.initial_sets[i];
    std::sort(set.begin(), set.end());
    const bool in_range =
        set.empty() || (set.front() >= 0 && set.back() < regrets.cols());
    if (static_cast<int64_t>(set.size()) != set_size || !in_range ||
        std::adjacent_find(set.begin(), set.end()) != set.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("initial_sets[", i, "] must hold ", set_size,
                       " distinct columns in [0, ", regrets.cols(), "), not {",
                       absl::StrJoin(search.initial_sets[i], ", "), "}"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

double SetLoss(const Eigen::MatrixXd& regrets,
               const std::vector<int64_t>& members) {
  Eigen::VectorXd scratch;
  return LossOf(Known(regrets), members, scratch);
}

absl::StatusOr<EvolutionaryResult> EvolutionaryPortfolio(
    const Eigen::MatrixXd& regrets, int size, uint64_t seed,
    const EvolutionarySearch& search) {
  if (absl::Status status = Validate(regrets, size, search); !status.ok()) {
    return status;
  }
  const Eigen::MatrixXd table = Known(regrets);
  const int64_t n = table.cols();
  const int64_t set_size = std::min<int64_t>(size, n);
  EvolutionaryResult result;
  Eigen::VectorXd scratch;
  if (set_size == n) {  // One set only: every column.
    std::vector<int64_t> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    result.members = GreedyOrder(table, all);
    result.loss = LossOf(table, result.members, scratch);
    if (search.progress) search.progress(0, result.loss);
    return result;
  }

  // Eq. 14: w_j = exp(-min_t F(t, j)).
  std::vector<double> cumulative(static_cast<size_t>(n));
  double total = 0;
  for (int64_t j = 0; j < n; ++j) {
    total += std::exp(-table.col(j).minCoeff());
    cumulative[j] = total;
  }

  space::Rng rng(seed);
  Elite elite(static_cast<size_t>(search.parents));
  int64_t order = 0;
  auto offer = [&](std::vector<int64_t> members) {
    Entry entry;
    entry.loss = LossOf(table, members, scratch);
    entry.members = std::move(members);
    entry.order = order++;
    return elite.Offer(std::move(entry));
  };
  for (int i = 0; i < search.population; ++i) {
    std::vector<int64_t> members;
    while (static_cast<int64_t>(members.size()) < set_size) {
      members.push_back(WeightedDraw(cumulative, members, rng));
    }
    offer(std::move(members));
  }
  for (const std::vector<int64_t>& members : search.initial_sets) {
    offer(members);
  }

  std::vector<int64_t> pool;
  for (int64_t step = 1; step <= search.steps; ++step) {
    std::vector<int64_t> child;
    if (space::Uniform01(rng) < search.mutation_probability) {
      const Entry& parent = elite.Uniform(rng);
      std::vector<int64_t> excluded = parent.members;  // Also the removed one.
      child = parent.members;
      child.erase(child.begin() + static_cast<std::ptrdiff_t>(
                                      space::UniformIndex(rng, child.size())));
      child.push_back(WeightedDraw(cumulative, excluded, rng));
    } else {
      const Entry& a = elite.Uniform(rng);
      const Entry& b = elite.Uniform(rng);
      pool.clear();
      std::set_union(a.members.begin(), a.members.end(), b.members.begin(),
                     b.members.end(), std::back_inserter(pool));
      // A partial Fisher-Yates shuffle: the first set_size are the draw.
      for (int64_t i = 0; i < set_size; ++i) {
        const int64_t k = i + static_cast<int64_t>(space::UniformIndex(
                                  rng, static_cast<uint64_t>(pool.size()) - i));
        std::swap(pool[i], pool[k]);
      }
      child.assign(pool.begin(), pool.begin() + set_size);
    }
    if (offer(std::move(child))) ++result.improvements;
    if (search.progress && step % search.progress_every == 0 &&
        step != search.steps) {
      search.progress(step, elite.best().loss);
    }
  }
  result.members = GreedyOrder(table, elite.best().members);
  result.loss = elite.best().loss;
  if (search.progress) search.progress(search.steps, result.loss);
  return result;
}

}  // namespace metaopt::train
