#include "core/objective/pareto.h"

#include <algorithm>
#include <utility>

namespace metaopt::objective {

bool Dominates(absl::Span<const double> a, absl::Span<const double> b) {
  bool strictly = false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] > b[i]) return false;
    if (a[i] < b[i]) strictly = true;
  }
  return strictly;
}

std::vector<int> NonDominated(absl::Span<const Point> points) {
  std::vector<int> kept;
  for (size_t i = 0; i < points.size(); ++i) {
    bool dominated = false;
    for (size_t j = 0; j < points.size() && !dominated; ++j) {
      dominated = j != i && Dominates(points[j], points[i]);
    }
    if (!dominated) kept.push_back(static_cast<int>(i));
  }
  return kept;
}

double Hypervolume2D(absl::Span<const Point> points, const Point& reference) {
  std::vector<std::pair<double, double>> inside;
  for (const Point& p : points) {
    if (p[0] < reference[0] && p[1] < reference[1]) {
      inside.emplace_back(p[0], p[1]);
    }
  }
  // Sweep by the first coordinate: a point below every earlier one adds the
  // rectangle from it to the reference's first coordinate, between its second
  // coordinate and the lowest earlier one.
  std::sort(inside.begin(), inside.end());
  double area = 0;
  double lowest = reference[1];
  for (const auto& [x, y] : inside) {
    if (y >= lowest) continue;
    area += (reference[0] - x) * (lowest - y);
    lowest = y;
  }
  return area;
}

double Hypervolume3D(absl::Span<const Point> points, const Point& reference) {
  std::vector<Point> inside;
  for (const Point& p : points) {
    if (p[0] < reference[0] && p[1] < reference[1] && p[2] < reference[2]) {
      inside.push_back(p);
    }
  }
  std::sort(inside.begin(), inside.end(),
            [](const Point& a, const Point& b) { return a[2] < b[2]; });
  const Point reference_2d = {reference[0], reference[1]};
  std::vector<Point> below;  // the points at or below the slice, projected
  double volume = 0;
  for (size_t i = 0; i < inside.size(); ++i) {
    below.push_back({inside[i][0], inside[i][1]});
    const double top = i + 1 < inside.size() ? inside[i + 1][2] : reference[2];
    if (top > inside[i][2]) {
      volume += Hypervolume2D(below, reference_2d) * (top - inside[i][2]);
    }
  }
  return volume;
}

}  // namespace metaopt::objective
