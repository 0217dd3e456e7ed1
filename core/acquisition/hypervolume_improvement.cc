#include "core/acquisition/hypervolume_improvement.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/acquisition/acquisition.h"

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
  return (c - mean) * NormalCdf(z) + sd * NormalPdf(z);
}

NonDominatedBoxes::NonDominatedBoxes(
    absl::Span<const std::vector<double>> front, std::vector<double> reference)
    : reference_(std::move(reference)) {
  const int D = static_cast<int>(reference_.size());
  std::vector<std::vector<double>> inside;
  for (const std::vector<double>& p : front) {
    bool below = true;
    for (int d = 0; d < D; ++d) below = below && p[d] < reference_[d];
    if (below) inside.push_back(p);
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
    // The next cell, the first coordinate fastest.
    int d = 0;
    while (d + 1 < D && ++cell[d] + 1 == static_cast<int>(lines[d].size())) {
      cell[d] = 0;
      ++d;
    }
    if (d + 1 >= D) break;
  }
}

double NonDominatedBoxes::Expected(absl::Span<const double> mean,
                                   absl::Span<const double> sd) const {
  const int D = dimension();
  double total = 0;
  for (size_t b = 0; b < lower_.size(); ++b) {
    double volume = 1;
    for (int d = 0; d < D && volume > 0; ++d) {
      volume *= ExpectedShortfall(upper_[b][d], mean[d], sd[d]) -
                ExpectedShortfall(lower_[b][d], mean[d], sd[d]);
    }
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
