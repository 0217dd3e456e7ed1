// Monte-Carlo tree search over pipeline structures, as in Mosaic (H.
// Rakotoarison's thesis "Contributions to AutoML: hyper-parameter optimization
// and meta-learning", §4.3): PUCT selection,
// progressive widening, median node values, softmax priors from a surrogate,
// greedy surrogate-driven expansion.
//
// A node is a structure prefix: the algorithm chosen at each tree level from
// the root down (a path of algorithm indices; the root is the empty path). The
// tree only records which nodes exist; visits and values come from the
// environment, which derives them from the study's trials.
#ifndef METAOPT_CORE_POLICY_MCTS_H_
#define METAOPT_CORE_POLICY_MCTS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

namespace metaopt::policy {

using MctsPath = std::vector<int>;

struct MctsOptions {
  // C_ucb of the PUCT rule (§4.4.2: 1.3 in the experiments; §4.3.3's ".6" is
  // superseded there).
  double exploration = 1.3;
  // PW: a node visited n times may have floor(n^PW) children (§4.4.2: 0.6).
  double widening_exponent = 0.6;
  // Softmax temperature of the priors over the surrogate estimates (Eq. 4.3
  // has none, i.e. 1, on rewards in [0, 1]).
  double prior_temperature = 1.0;
};

// The median of `values` (the mean of the two middle ones for an even count).
// Requires a non-empty vector.
double Median(std::vector<double> values);

// softmax(values / temperature), computed with the maximum subtracted so that
// it never overflows. Empty in, empty out.
std::vector<double> SoftmaxPriors(const std::vector<double>& values,
                                  double temperature);

// How many children a node visited `visits` times may have: floor(visits^PW),
// at least 1.
int AllowedChildren(int64_t visits, double widening_exponent);

// Eq. 4.4 as the thesis prints it: value + c * prior * sqrt(parent_visits /
// (1 + child_visits)). (AlphaGo Zero, and the authors' public code, divide
// sqrt(n(s)) by 1 + n(s.a): that bonus decays as 1/n(s.a) instead of
// 1/sqrt(n(s.a)), and with the near-uniform softmax priors of rewards in
// [0, 1] it lets one child whose median leads after the initial design take
// every later walk. On sklearn-pipelines' stackoverflow task that form
// committed to one estimator for 23 trials; the printed form explores, and
// wins on sklearn-pipelines (regret at 25/50 trials .068/.053 -> .035/.024)
// with oboe unchanged (.038/.024).)
double PuctScore(double value, double prior, int64_t parent_visits,
                 int64_t child_visits, double exploration);

// A child as PUCT sees it.
struct MctsChild {
  int action = 0;
  double value = 0;  // median reward below it (or its estimate, if none yet)
  double prior = 0;
  int64_t visits = 0;
};

// The index (into `children`) of the PUCT maximiser; ties go to the first.
// Requires a non-empty vector.
int SelectPuct(const std::vector<MctsChild>& children, int64_t parent_visits,
               double exploration);

// What a walk needs to know about the study. Values and estimates are rewards
// on a common scale where larger is better (Mosaic normalises them to [0, 1]).
class MctsEnvironment {
 public:
  virtual ~MctsEnvironment() = default;
  // The actions below `path` that still lead somewhere (e.g. untried
  // catalogue entries), in increasing order. Empty: `path` is exhausted.
  virtual std::vector<int> ValidActions(const MctsPath& path) = 0;
  // n(path): the trials (pending ones included) compatible with `path`.
  virtual int64_t Visits(const MctsPath& path) = 0;
  // The median reward of the evaluated trials compatible with `path`; none
  // before the first one.
  virtual std::optional<double> Value(const MctsPath& path) = 0;
  // Q_F̂(path): the surrogate's expected reward of a random completion of
  // `path` (Eq. 4.2).
  virtual double Estimate(const MctsPath& path) = 0;
};

// The result of one walk: the node where the playout starts.
struct MctsWalk {
  MctsPath path;
  bool expanded = false;  // `path` was added to the tree by this walk
};

// The nodes of a search tree with `levels` levels. The root and its children
// (the first-level algorithms, created by the initial design in the thesis,
// §4.3.4) always exist; deeper nodes exist once added. A value type;
// thread-compatible.
class MctsTree {
 public:
  explicit MctsTree(int levels) : levels_(levels) {}

  int levels() const { return levels_; }
  // True for the root, every first-level node and every added node.
  bool Contains(const MctsPath& path) const;
  // Adds a node whose parent exists (no-op if it exists). INVALID_ARGUMENT for
  // a path that is empty, longer than levels() or has no parent; negative
  // actions are rejected too.
  absl::Status Add(const MctsPath& path);
  // The added nodes of depth >= 2 in creation order (what a restart needs).
  const std::vector<MctsPath>& added() const { return added_; }

  // One selection-expansion walk (Algorithm 2, with the code's progressive
  // widening): from the root, while the node is not a full structure: if it
  // has fewer children than min(|valid actions|, floor(n^PW)) (the root: all
  // valid actions), the untried valid action with the largest Estimate is
  // added and the walk ends there; otherwise the child maximising PuctScore
  // is entered, with priors the softmax of the children's estimates (over the
  // existing valid children, as the authors' code does) and values their
  // medians (a child without evaluations uses its estimate). NOT_FOUND if
  // the root has no valid action.
  absl::StatusOr<MctsWalk> Walk(MctsEnvironment& env,
                                const MctsOptions& options);

 private:
  int levels_;
  // Children of each node of depth >= 1 that has added children, in creation
  // order.
  absl::flat_hash_map<MctsPath, std::vector<int>> children_;
  std::vector<MctsPath> added_;
};

}  // namespace metaopt::policy

#endif  // METAOPT_CORE_POLICY_MCTS_H_
