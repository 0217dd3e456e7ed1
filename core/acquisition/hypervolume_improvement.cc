#include "core/acquisition/hypervolume_improvement.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/container/inlined_vector.h"
#include "core/acquisition/acquisition.h"
#include "core/objective/pareto.h"

namespace metaopt::acquisition {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The sorted distinct values of coordinate d of `points`, below `limit`,
// with -infinity first and `limit` last: the grid lines of coordinate d.
std::vector<double> GridLines(const std::vector<std::vector<double>>& points,
                              int d, double limit) {
  std::vector<double> lines = {-kInf};
  for (const std::vector<double>& p : points) lines.push_back(p[d]);
  lines.push_back(limit);
  std::sort(lines.begin(), lines.end());
  lines.erase(std::unique(lines.begin(), lines.end()), lines.end());
  return lines;
}

}  // namespace

double ExpectedShortfall(double c, double mean, double sd) {
  if (c == -kInf) return 0;
  if (!(sd > 0)) return std::max(c - mean, 0.0);
  const double z = (c - mean) / sd;
  // The tails, without erfc and exp, to the same bits: from z = 10 on the
  // normal cdf rounds to 1 and sd * pdf(z) (below 1e-22 (c - mean)) to
  // nothing beside c - mean; from z = -40 down erfc and exp underflow to 0
  // (erfc returns 0 from x = 28 on). A catalogue screen's rows mostly lie in
  // the tails of the grid lines far from them.
  if (z >= 10) return c - mean;
  if (z <= -40) return 0;
  return (c - mean) * NormalCdf(z) + sd * NormalPdf(z);
}

NonDominatedBoxes::NonDominatedBoxes(
    absl::Span<const std::vector<double>> front, std::vector<double> reference)
    : reference_(std::move(reference)) {
  const int D = static_cast<int>(reference_.size());
  // The non-dominated points strictly below the reference: a dominated
  // point adds no region, only grid lines.
  std::vector<std::vector<double>> below_reference;
  for (const std::vector<double>& p : front) {
    bool below = true;
    for (int d = 0; d < D; ++d) below = below && p[d] < reference_[d];
    if (below) below_reference.push_back(p);
  }
  std::vector<std::vector<double>> inside;
  for (int i : objective::NonDominated(below_reference)) {
    inside.push_back(std::move(below_reference[i]));
  }
  // Grid over the first D-1 coordinates; each cell gets one box whose last
  // coordinate runs from -infinity up to the lowest last coordinate of the
  // points weakly below the cell's lower corner.
  std::vector<std::vector<double>> lines;
  for (int d = 0; d + 1 < D; ++d) {
    lines.push_back(GridLines(inside, d, reference_[d]));
  }
  std::vector<int> cell(D > 1 ? D - 1 : 0, 0);
  while (true) {
    std::vector<double> lower(D, -kInf);
    std::vector<double> upper(D);
    for (int d = 0; d + 1 < D; ++d) {
      lower[d] = lines[d][cell[d]];
      upper[d] = lines[d][cell[d] + 1];
    }
    double top = reference_[D - 1];
    for (const std::vector<double>& p : inside) {
      bool covers = true;
      for (int d = 0; d + 1 < D; ++d) covers = covers && p[d] <= lower[d];
      if (covers) top = std::min(top, p[D - 1]);
    }
    upper[D - 1] = top;
    lower_.push_back(std::move(lower));
    upper_.push_back(std::move(upper));
    cell_.push_back(cell);
    tops_.push_back(top);
    // The next cell, the first coordinate fastest.
    int d = 0;
    while (d + 1 < D && ++cell[d] + 1 == static_cast<int>(lines[d].size())) {
      cell[d] = 0;
      ++d;
    }
    if (d + 1 >= D) break;
  }
  lines_ = std::move(lines);
  // The distinct tops, and each box's among them.
  std::vector<double> tops = tops_;
  std::sort(tops.begin(), tops.end());
  tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
  for (double top : tops_) {
    top_.push_back(static_cast<int>(
        std::lower_bound(tops.begin(), tops.end(), top) - tops.begin()));
  }
  tops_ = std::move(tops);
}

double NonDominatedBoxes::Expected(absl::Span<const double> mean,
                                   absl::Span<const double> sd) const {
  const int D = dimension();
  // Psi_d at each grid line of the first D-1 coordinates (coordinate d's from
  // first[d] on) and at each top of the last: the same values the boxes'
  // factors take, computed once. Called for every row of a catalogue: small
  // fronts stay off the heap.
  absl::InlinedVector<double, 64> psi;
  absl::InlinedVector<size_t, 2> first;
  for (int d = 0; d + 1 < D; ++d) {
    first.push_back(psi.size());
    for (double line : lines_[d]) {
      psi.push_back(ExpectedShortfall(line, mean[d], sd[d]));
    }
  }
  absl::InlinedVector<double, 64> psi_top;
  for (double top : tops_) {
    psi_top.push_back(ExpectedShortfall(top, mean[D - 1], sd[D - 1]) -
                      ExpectedShortfall(-kInf, mean[D - 1], sd[D - 1]));
  }
  double total = 0;
  for (size_t b = 0; b < cell_.size(); ++b) {
    double volume = 1;
    for (int d = 0; d + 1 < D && volume > 0; ++d) {
      const double* line = psi.data() + first[d] + cell_[b][d];
      volume *= line[1] - line[0];
    }
    if (volume > 0) volume *= psi_top[top_[b]];
    total += volume;
  }
  return std::max(total, 0.0);
}

double NonDominatedBoxes::Improvement(absl::Span<const double> y) const {
  const int D = dimension();
  double total = 0;
  for (size_t b = 0; b < lower_.size(); ++b) {
    double volume = 1;
    for (int d = 0; d < D; ++d) {
      volume *= std::max(0.0, upper_[b][d] - std::max(lower_[b][d], y[d]));
    }
    total += volume;
  }
  return total;
}

}  // namespace metaopt::acquisition
