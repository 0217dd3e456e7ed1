// A small hand-written SVG line-chart writer for metaopt-bench: axes with
// ticks and labels, a legend, one line per series with an optional shaded
// band (e.g. ±1 standard error), linear or log-scale y.
//
//   LineChart chart;
//   chart.title = "Normalised regret";
//   chart.series.push_back({"random", x, mean, mean - sem, mean + sem});
//   std::string svg = RenderLineChart(chart);
//
// The output is standalone SVG 1.1 (opens in any browser). Every series is
// exactly one <path> element; bands are <polygon>s and axes/ticks <line>s.
//
// Not a packaged library: Debian's plotting libraries (PLplot, gnuplot through
// a pipe) add a runtime dependency or program for a few line charts, and do
// not promise the element structure above, which svg_plot_test checks.
#ifndef METAOPT_BENCH_SVG_PLOT_H_
#define METAOPT_BENCH_SVG_PLOT_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace metaopt::bench {

// One line. `lower`/`upper` are empty (no band) or as long as `x`.
struct PlotSeries {
  std::string name;
  std::vector<double> x;
  std::vector<double> y;
  std::vector<double> lower;
  std::vector<double> upper;
};

// A plain value; thread-compatible.
struct LineChart {
  std::string title;
  std::string subtitle;  // smaller grey line under the title; may be empty
  std::string x_label;
  std::string y_label;
  bool log_y = false;
  // Axis ranges; unset: from the data (y: including the bands).
  std::optional<double> y_min;
  std::optional<double> y_max;
  // Log scale: values (and band edges) below this are drawn at it; unset: the
  // decade below the smallest positive value of a line, but not below 1e-9.
  std::optional<double> log_floor;
  int width = 760;
  int height = 460;
  std::vector<PlotSeries> series;
};

// The SVG document.
std::string RenderLineChart(const LineChart& chart);

// "Nice" tick positions (steps of 1, 2 or 5 times a power of ten) covering
// [lo, hi] with about `target` ticks; the first tick is <= lo and the last >=
// hi. Requires lo <= hi.
std::vector<double> NiceTicks(double lo, double hi, int target);

// Tick label text: shortest of %g-style forms without trailing zeros.
std::string FormatTick(double value);

// `text` with &, <, >, " escaped for XML.
std::string XmlEscape(std::string_view text);

// The colour of series `i` (a colour-blind-friendly palette, cycled).
std::string SeriesColor(int i);

}  // namespace metaopt::bench

#endif  // METAOPT_BENCH_SVG_PLOT_H_
