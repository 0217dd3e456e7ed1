#include "bench/svg_plot.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::bench {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

int Count(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + 1)) {
    ++n;
  }
  return n;
}

LineChart ThreeSeries(bool log_y) {
  LineChart chart;
  chart.title = "Regret <test> & more";
  chart.subtitle = "mean ± sem";
  chart.x_label = "trials";
  chart.y_label = "regret";
  chart.log_y = log_y;
  for (int i = 0; i < 3; ++i) {
    PlotSeries s;
    s.name = "method " + std::to_string(i);
    for (int k = 1; k <= 20; ++k) {
      const double y = (i + 1) * 0.5 / k - (k == 20 ? (i + 1) * 0.5 / k : 0);
      s.x.push_back(k);
      s.y.push_back(y);
      s.lower.push_back(y * 0.8);
      s.upper.push_back(y * 1.2);
    }
    chart.series.push_back(std::move(s));
  }
  return chart;
}

TEST(NiceTicksTest, CoversTheRangeWithRoundSteps) {
  EXPECT_THAT(NiceTicks(0, 1, 5),
              ElementsAre(0, 0.2, 0.4, 0.6000000000000001, 0.8, 1));
  EXPECT_THAT(NiceTicks(1, 50, 8), ElementsAre(0, 10, 20, 30, 40, 50));
  const std::vector<double> ticks = NiceTicks(0.013, 0.87, 6);
  EXPECT_LE(ticks.front(), 0.013);
  EXPECT_GE(ticks.back(), 0.87);
}

TEST(FormatTickTest, ShortForms) {
  EXPECT_EQ(FormatTick(0), "0");
  EXPECT_EQ(FormatTick(0.6000000000000001), "0.6");
  EXPECT_EQ(FormatTick(25), "25");
  EXPECT_EQ(FormatTick(0.001), "0.001");
  EXPECT_EQ(FormatTick(1e-5), "1e-5");
  EXPECT_EQ(FormatTick(2e-7), "2e-7");
}

TEST(XmlEscapeTest, EscapesMarkup) {
  EXPECT_EQ(XmlEscape("a<b & \"c\">"), "a&lt;b &amp; &quot;c&quot;&gt;");
}

TEST(RenderLineChartTest, OnePathPerSeriesWithBandsAndLegend) {
  const std::string svg = RenderLineChart(ThreeSeries(false));
  EXPECT_TRUE(
      absl::StartsWith(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_TRUE(absl::EndsWith(svg, "</svg>\n"));
  EXPECT_EQ(Count(svg, "<path "), 3);
  EXPECT_EQ(Count(svg, "<polygon "), 3);
  EXPECT_THAT(svg, HasSubstr(">method 2</text>"));
  EXPECT_THAT(svg, HasSubstr("Regret &lt;test&gt; &amp; more"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
}

TEST(RenderLineChartTest, LogScaleDrawsZerosAtTheFloor) {
  const std::string svg = RenderLineChart(ThreeSeries(true));
  EXPECT_EQ(Count(svg, "<path "), 3);
  EXPECT_THAT(svg, HasSubstr("drawn at"));
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
}

TEST(RenderLineChartTest, EmptyChartIsStillADocument) {
  LineChart chart;
  chart.title = "empty";
  const std::string svg = RenderLineChart(chart);
  EXPECT_TRUE(absl::StartsWith(svg, "<svg"));
  EXPECT_EQ(Count(svg, "<path "), 0);
}

}  // namespace
}  // namespace metaopt::bench
