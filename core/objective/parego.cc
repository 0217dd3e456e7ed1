#include "core/objective/parego.h"

#include <algorithm>
#include <cstddef>

namespace metaopt::objective {
namespace {

// Appends every vector of `left` more non-negative numerators summing to
// `total` after `prefix`, largest first, each divided by `divisions`.
void AppendCompositions(int left, int total, int divisions,
                        std::vector<int>& prefix, std::vector<Point>& out) {
  if (left == 1) {
    prefix.push_back(total);
    Point weights;
    weights.reserve(prefix.size());
    for (int n : prefix) weights.push_back(static_cast<double>(n) / divisions);
    out.push_back(std::move(weights));
    prefix.pop_back();
    return;
  }
  for (int n = total; n >= 0; --n) {
    prefix.push_back(n);
    AppendCompositions(left - 1, total - n, divisions, prefix, out);
    prefix.pop_back();
  }
}

}  // namespace

int ParegoDivisions(int objectives) {
  if (objectives <= 1) return 1;
  return objectives == 2 ? 10 : 4;
}

std::vector<Point> SimplexLattice(int objectives, int divisions) {
  std::vector<Point> out;
  if (objectives < 1 || divisions < 1) return out;
  std::vector<int> prefix;
  AppendCompositions(objectives, divisions, divisions, prefix, out);
  return out;
}

double AugmentedTchebycheff(absl::Span<const double> f,
                            absl::Span<const double> weights, double rho) {
  double largest = 0;
  double sum = 0;
  for (size_t j = 0; j < f.size() && j < weights.size(); ++j) {
    const double weighted = weights[j] * f[j];
    largest = j == 0 ? weighted : std::max(largest, weighted);
    sum += weighted;
  }
  return largest + rho * sum;
}

std::vector<Point> NormalizeByRange(absl::Span<const Point> points) {
  std::vector<Point> out(points.begin(), points.end());
  if (points.empty()) return out;
  const size_t d = points[0].size();
  for (size_t j = 0; j < d; ++j) {
    double lo = points[0][j];
    double hi = points[0][j];
    for (const Point& p : points) {
      lo = std::min(lo, p[j]);
      hi = std::max(hi, p[j]);
    }
    for (Point& p : out) p[j] = hi > lo ? (p[j] - lo) / (hi - lo) : 0.0;
  }
  return out;
}

std::vector<double> ParegoScalarize(absl::Span<const Point> points,
                                    absl::Span<const double> weights,
                                    double rho) {
  std::vector<double> out;
  out.reserve(points.size());
  for (const Point& p : NormalizeByRange(points)) {
    out.push_back(AugmentedTchebycheff(p, weights, rho));
  }
  return out;
}

}  // namespace metaopt::objective
