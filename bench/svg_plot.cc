#include "bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace metaopt::bench {
namespace {

constexpr char kFont[] = "Helvetica, Arial, sans-serif";
constexpr char kAxisColor[] = "#444444";
constexpr char kGridColor[] = "#e6e6e6";
constexpr char kTextColor[] = "#222222";
constexpr char kSubtleTextColor[] = "#666666";

// Coordinates with two decimals (enough for screen pixels, keeps files small).
std::string Num(double v) { return absl::StrFormat("%.2f", v); }

// Rough width in pixels of `text` at `font_px` in a sans-serif font.
double TextWidth(std::string_view text, double font_px) {
  return 0.56 * font_px * static_cast<double>(text.size());
}

struct Axis {
  double lo = 0;
  double hi = 1;
  bool log = false;
  double pixel_lo = 0;  // pixel of `lo`
  double pixel_hi = 1;  // pixel of `hi`

  double Transform(double v) const { return log ? std::log10(v) : v; }
  double Map(double v) const {
    const double t0 = Transform(lo);
    const double t1 = Transform(hi);
    const double f = t1 == t0 ? 0.5 : (Transform(v) - t0) / (t1 - t0);
    return pixel_lo + f * (pixel_hi - pixel_lo);
  }
};

struct Tick {
  double value;
  bool labelled;
};

std::vector<Tick> LogTicks(double lo, double hi) {
  const int first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  const int last = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  const bool few_decades = last - first <= 2;
  std::vector<Tick> ticks;
  for (int k = first; k <= last; ++k) {
    const double decade = std::pow(10.0, k);
    for (int m = 1; m <= 9; ++m) {
      const double v = m * decade;
      if (v < lo * (1 - 1e-9) || v > hi * (1 + 1e-9)) continue;
      const bool labelled = m == 1 || (few_decades && (m == 2 || m == 5));
      ticks.push_back({v, labelled});
    }
  }
  return ticks;
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string SeriesColor(int i) {
  // Tableau 10 reordered so that the first colours differ most.
  static const char* const kPalette[] = {
      "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
      "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};
  constexpr int kSize = sizeof(kPalette) / sizeof(kPalette[0]);
  return kPalette[((i % kSize) + kSize) % kSize];
}

std::vector<double> NiceTicks(double lo, double hi, int target) {
  target = std::max(target, 2);
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  const double first = std::floor(lo / step + 1e-9);
  const double last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; k += 1) {
    double v = k * step;
    if (std::abs(v) < step * 1e-9) v = 0;
    ticks.push_back(v);
  }
  return ticks;
}

std::string FormatTick(double value) {
  if (value == 0) return "0";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e-4 && magnitude < 1e9) {
    // Fixed notation with as few decimals as round-trip (to 1e-9 relative).
    for (int decimals = 0; decimals <= 10; ++decimals) {
      std::string text = absl::StrFormat("%.*f", decimals, value);
      const double back = std::strtod(text.c_str(), nullptr);
      if (std::abs(back - value) <= 1e-9 * magnitude) return text;
    }
  }
  for (int precision = 1; precision <= 10; ++precision) {
    std::string text = absl::StrFormat("%.*g", precision, value);
    const double back = std::strtod(text.c_str(), nullptr);
    if (std::abs(back - value) <= 1e-9 * magnitude) {
      // "1e-05" -> "1e-5".
      for (const char* exponent : {"e-0", "e+0"}) {
        const size_t at = text.find(exponent);
        if (at != std::string::npos) text.erase(at + 2, 1);
      }
      return text;
    }
  }
  return absl::StrFormat("%g", value);
}

std::string RenderLineChart(const LineChart& chart) {
  const double width = chart.width;
  const double height = chart.height;

  // Legend width from the longest name.
  double legend_text = 0;
  for (const PlotSeries& s : chart.series) {
    legend_text = std::max(legend_text, TextWidth(s.name, 13));
  }
  const double legend_width = std::max(90.0, legend_text + 44);
  const double left = 78;
  const double right = width - legend_width - 20;
  const double top = chart.subtitle.empty() ? 52 : 68;
  const double bottom = height - 58;

  // Data ranges.
  double x_lo = std::numeric_limits<double>::infinity();
  double x_hi = -x_lo;
  double y_lo = x_lo;
  double y_hi = -x_lo;
  double min_positive = x_lo;
  // The log floor follows the lines, not the bands (a band's lower edge can
  // come arbitrarily close to 0).
  auto take_y = [&](double v, bool line) {
    if (!std::isfinite(v)) return;
    y_lo = std::min(y_lo, v);
    y_hi = std::max(y_hi, v);
    if (line && v > 0) min_positive = std::min(min_positive, v);
  };
  for (const PlotSeries& s : chart.series) {
    for (double v : s.x) {
      if (!std::isfinite(v)) continue;
      x_lo = std::min(x_lo, v);
      x_hi = std::max(x_hi, v);
    }
    for (double v : s.y) take_y(v, true);
    for (double v : s.lower) take_y(v, false);
    for (double v : s.upper) take_y(v, false);
  }
  if (!std::isfinite(x_lo)) {
    x_lo = 0;
    x_hi = 1;
  }
  if (x_hi == x_lo) x_hi = x_lo + 1;
  if (!std::isfinite(y_lo)) {
    y_lo = chart.log_y ? 0.1 : 0;
    y_hi = 1;
  }

  Axis x_axis{x_lo, x_hi, false, left, right};
  Axis y_axis;
  y_axis.log = chart.log_y;
  y_axis.pixel_lo = bottom;
  y_axis.pixel_hi = top;
  std::vector<Tick> y_ticks;
  double floor_value = 0;
  bool clamped = false;
  if (chart.log_y) {
    if (!std::isfinite(min_positive)) min_positive = 1;
    floor_value = chart.log_floor.value_or(std::max(
        1e-9, std::pow(10.0, std::floor(std::log10(min_positive) + 1e-9))));
    double lo = std::max(floor_value, chart.y_min.value_or(floor_value));
    double hi = chart.y_max.value_or(std::max(y_hi, lo * 10));
    clamped = y_lo < floor_value;
    lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
    hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
    if (hi <= lo) hi = lo * 10;
    y_axis.lo = lo;
    y_axis.hi = hi;
    floor_value = lo;
    y_ticks = LogTicks(lo, hi);
  } else {
    const double lo = chart.y_min.value_or(y_lo);
    const double hi = chart.y_max.value_or(y_hi);
    std::vector<double> ticks = NiceTicks(lo, std::max(hi, lo), 6);
    y_axis.lo = chart.y_min.has_value() ? lo : ticks.front();
    y_axis.hi = chart.y_max.has_value() ? hi : ticks.back();
    for (double t : ticks) {
      if (t >= y_axis.lo - 1e-12 && t <= y_axis.hi + 1e-12) {
        y_ticks.push_back({t, true});
      }
    }
  }
  auto clamp_y = [&](double v) {
    if (chart.log_y) v = std::max(v, y_axis.lo);
    return std::clamp(v, y_axis.lo, y_axis.hi);
  };

  std::string svg;
  absl::StrAppend(
      &svg,
      "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"",
      chart.width, "\" height=\"", chart.height, "\" viewBox=\"0 0 ",
      chart.width, " ", chart.height, "\" font-family=\"", kFont, "\">\n");
  absl::StrAppend(&svg, "<title>", XmlEscape(chart.title), "</title>\n");
  absl::StrAppend(&svg, "<rect x=\"0\" y=\"0\" width=\"", chart.width,
                  "\" height=\"", chart.height, "\" fill=\"#ffffff\"/>\n");
  absl::StrAppend(&svg, "<defs><clipPath id=\"plot-area\"><rect x=\"",
                  Num(left), "\" y=\"", Num(top), "\" width=\"",
                  Num(right - left), "\" height=\"", Num(bottom - top),
                  "\"/></clipPath></defs>\n");

  // Title and subtitle.
  // Shrink a long title to fit the width (bold glyphs are ~0.6 em wide).
  const double title_px = std::clamp(
      (width - left - 12) / (0.6 * std::max<size_t>(chart.title.size(), 1)),
      11.0, 17.0);
  absl::StrAppend(&svg, "<text x=\"", Num(left), "\" y=\"28\" font-size=\"",
                  Num(title_px), "\" font-weight=\"bold\" fill=\"", kTextColor,
                  "\">", XmlEscape(chart.title), "</text>\n");
  if (!chart.subtitle.empty()) {
    absl::StrAppend(&svg, "<text x=\"", Num(left),
                    "\" y=\"48\" font-size=\"12.5\" fill=\"", kSubtleTextColor,
                    "\">", XmlEscape(chart.subtitle), "</text>\n");
  }

  // Grid and ticks.
  absl::StrAppend(&svg, "<g stroke-width=\"1\">\n");
  std::string labels;
  for (const Tick& tick : y_ticks) {
    const double py = y_axis.Map(tick.value);
    absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(py),
                    "\" x2=\"", Num(right), "\" y2=\"", Num(py), "\" stroke=\"",
                    kGridColor, "\"",
                    tick.labelled ? "" : " stroke-dasharray=\"2,3\"", "/>\n");
    absl::StrAppend(&svg, "<line x1=\"", Num(left - (tick.labelled ? 6 : 3)),
                    "\" y1=\"", Num(py), "\" x2=\"", Num(left), "\" y2=\"",
                    Num(py), "\" stroke=\"", kAxisColor, "\"/>\n");
    if (tick.labelled) {
      absl::StrAppend(&labels, "<text x=\"", Num(left - 10), "\" y=\"",
                      Num(py + 4.5), "\" font-size=\"12.5\" fill=\"",
                      kTextColor, "\" text-anchor=\"end\">",
                      XmlEscape(FormatTick(tick.value)), "</text>\n");
    }
  }
  std::vector<double> x_ticks;
  {
    const std::vector<double> nice = NiceTicks(x_lo, x_hi, 8);
    const double step = nice.size() > 1 ? nice[1] - nice[0] : 1;
    for (double t : nice) {
      if (t >= x_lo - 1e-9 && t <= x_hi + 1e-9) x_ticks.push_back(t);
    }
    // Label the start of the axis too (e.g. trial 1) unless a tick is near.
    if (x_ticks.empty() || x_ticks.front() - x_lo > 0.4 * step) {
      x_ticks.insert(x_ticks.begin(), x_lo);
    }
  }
  for (double t : x_ticks) {
    const double px = x_axis.Map(t);
    absl::StrAppend(&svg, "<line x1=\"", Num(px), "\" y1=\"", Num(top),
                    "\" x2=\"", Num(px), "\" y2=\"", Num(bottom),
                    "\" stroke=\"", kGridColor, "\"/>\n");
    absl::StrAppend(&svg, "<line x1=\"", Num(px), "\" y1=\"", Num(bottom),
                    "\" x2=\"", Num(px), "\" y2=\"", Num(bottom + 6),
                    "\" stroke=\"", kAxisColor, "\"/>\n");
    absl::StrAppend(&labels, "<text x=\"", Num(px), "\" y=\"", Num(bottom + 22),
                    "\" font-size=\"12.5\" fill=\"", kTextColor,
                    "\" text-anchor=\"middle\">", XmlEscape(FormatTick(t)),
                    "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n<g>\n", labels, "</g>\n");

  // Bands, then lines, clipped to the plot area.
  absl::StrAppend(&svg, "<g clip-path=\"url(#plot-area)\">\n");
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const PlotSeries& s = chart.series[i];
    if (s.lower.size() != s.x.size() || s.upper.size() != s.x.size() ||
        s.x.empty()) {
      continue;
    }
    std::string points;
    for (size_t k = 0; k < s.x.size(); ++k) {
      absl::StrAppend(&points, k == 0 ? "" : " ", Num(x_axis.Map(s.x[k])), ",",
                      Num(y_axis.Map(clamp_y(s.upper[k]))));
    }
    for (size_t k = s.x.size(); k-- > 0;) {
      absl::StrAppend(&points, " ", Num(x_axis.Map(s.x[k])), ",",
                      Num(y_axis.Map(clamp_y(s.lower[k]))));
    }
    absl::StrAppend(&svg, "<polygon class=\"band\" points=\"", points,
                    "\" fill=\"", SeriesColor(static_cast<int>(i)),
                    "\" fill-opacity=\"0.16\" stroke=\"none\"/>\n");
  }
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const PlotSeries& s = chart.series[i];
    std::string d;
    const size_t n = std::min(s.x.size(), s.y.size());
    for (size_t k = 0; k < n; ++k) {
      absl::StrAppend(&d, k == 0 ? "M" : " L", Num(x_axis.Map(s.x[k])), ",",
                      Num(y_axis.Map(clamp_y(s.y[k]))));
    }
    absl::StrAppend(&svg, "<path class=\"line\" d=\"", d, "\" fill=\"none\"",
                    " stroke=\"", SeriesColor(static_cast<int>(i)),
                    "\" stroke-width=\"2.2\" stroke-linejoin=\"round\"",
                    " stroke-linecap=\"round\"><title>", XmlEscape(s.name),
                    "</title></path>\n");
  }
  absl::StrAppend(&svg, "</g>\n");

  // Axes (left and bottom) and a light frame.
  absl::StrAppend(&svg, "<rect x=\"", Num(left), "\" y=\"", Num(top),
                  "\" width=\"", Num(right - left), "\" height=\"",
                  Num(bottom - top),
                  "\" fill=\"none\" stroke=\"#cccccc\" stroke-width=\"1\"/>\n");
  absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(bottom),
                  "\" x2=\"", Num(right), "\" y2=\"", Num(bottom),
                  "\" stroke=\"", kAxisColor, "\" stroke-width=\"1.2\"/>\n");
  absl::StrAppend(&svg, "<line x1=\"", Num(left), "\" y1=\"", Num(top),
                  "\" x2=\"", Num(left), "\" y2=\"", Num(bottom),
                  "\" stroke=\"", kAxisColor, "\" stroke-width=\"1.2\"/>\n");

  // Axis labels.
  absl::StrAppend(&svg, "<text x=\"", Num((left + right) / 2), "\" y=\"",
                  Num(height - 14), "\" font-size=\"14\" fill=\"", kTextColor,
                  "\" text-anchor=\"middle\">", XmlEscape(chart.x_label),
                  "</text>\n");
  const double y_mid = (top + bottom) / 2;
  absl::StrAppend(&svg, "<text x=\"20\" y=\"", Num(y_mid),
                  "\" font-size=\"14\" fill=\"", kTextColor,
                  "\" text-anchor=\"middle\" transform=\"rotate(-90 20 ",
                  Num(y_mid), ")\">", XmlEscape(chart.y_label), "</text>\n");

  // Legend, right of the plot area.
  const double legend_x = right + 18;
  absl::StrAppend(&svg, "<g font-size=\"13\" fill=\"", kTextColor, "\">\n");
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double ly = top + 14 + 22 * static_cast<double>(i);
    const std::string color = SeriesColor(static_cast<int>(i));
    const bool band = !chart.series[i].lower.empty();
    if (band) {
      absl::StrAppend(&svg, "<rect x=\"", Num(legend_x), "\" y=\"", Num(ly - 6),
                      "\" width=\"24\" height=\"12\" fill=\"", color,
                      "\" fill-opacity=\"0.16\"/>\n");
    }
    absl::StrAppend(&svg, "<line x1=\"", Num(legend_x), "\" y1=\"", Num(ly),
                    "\" x2=\"", Num(legend_x + 24), "\" y2=\"", Num(ly),
                    "\" stroke=\"", color, "\" stroke-width=\"2.6\"/>\n");
    absl::StrAppend(&svg, "<text x=\"", Num(legend_x + 32), "\" y=\"",
                    Num(ly + 4.5), "\">", XmlEscape(chart.series[i].name),
                    "</text>\n");
  }
  if (clamped) {
    const double ly = top + 14 + 22 * static_cast<double>(chart.series.size());
    absl::StrAppend(&svg, "<text x=\"", Num(legend_x), "\" y=\"", Num(ly + 8),
                    "\" font-size=\"11\" fill=\"", kSubtleTextColor,
                    "\">values &lt; ", XmlEscape(FormatTick(floor_value)),
                    "</text>\n");
    absl::StrAppend(&svg, "<text x=\"", Num(legend_x), "\" y=\"", Num(ly + 22),
                    "\" font-size=\"11\" fill=\"", kSubtleTextColor,
                    "\">drawn at ", XmlEscape(FormatTick(floor_value)),
                    "</text>\n");
  }
  absl::StrAppend(&svg, "</g>\n</svg>\n");
  return svg;
}

}  // namespace metaopt::bench
