#include "server/metrics/metrics_registry.h"

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::metrics {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

TEST(MetricsRegistryTest, CounterWithoutLabels) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Counter> * family,
      registry.AddCounter("jobs_total", "Jobs done.", {}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Counter * counter, family->WithLabels({}));
  counter->Increment();
  counter->Increment(2.5);
  EXPECT_EQ(registry.TextExposition(),
            "# HELP jobs_total Jobs done.\n"
            "# TYPE jobs_total counter\n"
            "jobs_total 3.5\n");
}

TEST(MetricsRegistryTest, CounterIgnoresNegativeAndNanAmounts) {
  Counter counter;
  counter.Increment(4);
  counter.Increment(-1);
  counter.Increment(std::nan(""));
  EXPECT_EQ(counter.value(), 4);
}

TEST(MetricsRegistryTest, ChildrenSortedByLabelValuesAndEscaped) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Gauge> * family,
      registry.AddGauge("temperature", "Line one\nback\\slash",
                        {"room", "unit"}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Gauge * b, family->WithLabels({"b", "c"}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Gauge * a,
                               family->WithLabels({"a\"q\"\n\\", "c"}));
  b->Set(-2);
  a->Set(0.1);
  a->Increment(0.2);
  EXPECT_EQ(registry.TextExposition(),
            "# HELP temperature Line one\\nback\\\\slash\n"
            "# TYPE temperature gauge\n"
            "temperature{room=\"a\\\"q\\\"\\n\\\\\",unit=\"c\"} "
            "0.30000000000000004\n"
            "temperature{room=\"b\",unit=\"c\"} -2\n");
}

TEST(MetricsRegistryTest, SameLabelValuesReturnSameChild) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(Family<Counter> * family,
                               registry.AddCounter("c_total", "c", {"x"}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Counter * first, family->WithLabels({"1"}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Counter * second, family->WithLabels({"1"}));
  EXPECT_EQ(first, second);
}

TEST(MetricsRegistryTest, WrongNumberOfLabelValues) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Counter> * family,
      registry.AddCounter("c_total", "c", {"method", "code"}));
  EXPECT_THAT(family->WithLabels({"x"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1 label values given for 2 label names "
                                 "(method,code)")));
}

TEST(MetricsRegistryTest, HistogramBucketsSumCountAndInf) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Histogram> * family,
      registry.AddHistogram("latency_seconds", "Latency.", {"method"},
                            {0.1, 1, 2.5}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Histogram * h, family->WithLabels({"Get"}));
  for (double v : {0.05, 0.1, 0.5, 3.0, 100.0}) h->Observe(v);
  h->Observe(std::nan(""));  // ignored
  EXPECT_EQ(registry.TextExposition(),
            "# HELP latency_seconds Latency.\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{method=\"Get\",le=\"0.1\"} 2\n"
            "latency_seconds_bucket{method=\"Get\",le=\"1\"} 3\n"
            "latency_seconds_bucket{method=\"Get\",le=\"2.5\"} 3\n"
            "latency_seconds_bucket{method=\"Get\",le=\"+Inf\"} 5\n"
            "latency_seconds_sum{method=\"Get\"} 103.65\n"
            "latency_seconds_count{method=\"Get\"} 5\n");
}

TEST(MetricsRegistryTest, HistogramWithoutLabels) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Histogram> * family,
      registry.AddHistogram("h_seconds", "h", {}, {1}));
  METAOPT_ASSERT_OK_AND_ASSIGN(Histogram * h, family->WithLabels({}));
  h->Observe(2);
  EXPECT_THAT(registry.TextExposition(),
              HasSubstr("h_seconds_bucket{le=\"1\"} 0\n"
                        "h_seconds_bucket{le=\"+Inf\"} 1\n"
                        "h_seconds_sum 2\n"
                        "h_seconds_count 1\n"));
}

TEST(MetricsRegistryTest, RejectsBadNamesAndBuckets) {
  Registry registry;
  EXPECT_THAT(registry.AddCounter("1bad", "h", {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("\"1bad\" must match")));
  EXPECT_THAT(registry.AddCounter("ok", "h", {"a-b"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("label name \"a-b\"")));
  EXPECT_THAT(registry.AddCounter("ok", "h", {"__reserved"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("not start with \"__\"")));
  EXPECT_THAT(
      registry.AddCounter("ok", "h", {"a", "a"}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("appears twice")));
  EXPECT_THAT(
      registry.AddHistogram("h", "h", {"le"}, {1}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("reserved")));
  EXPECT_THAT(registry.AddHistogram("h", "h", {}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at least one bucket")));
  EXPECT_THAT(registry.AddHistogram("h", "h", {}, {1, 1}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bound [1] 1 is not greater")));
  EXPECT_THAT(
      registry.AddHistogram("h", "h", {},
                            {std::numeric_limits<double>::infinity()}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not finite")));
  METAOPT_EXPECT_OK(registry.AddGauge("dup", "h", {}));
  EXPECT_THAT(registry.AddCounter("dup", "h", {}),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("dup")));
  // Nothing half-registered is rendered.
  EXPECT_EQ(registry.TextExposition(), "# HELP dup h\n# TYPE dup gauge\n");
}

TEST(MetricsRegistryTest, CollectorsRunBeforeEachScrape) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(Family<Gauge> * family,
                               registry.AddGauge("items", "Items.", {"kind"}));
  int scrapes = 0;
  registry.AddCollector([&] {
    ++scrapes;
    family->Clear();
    (*family->WithLabels({scrapes == 1 ? "old" : "new"}))->Set(scrapes);
  });
  EXPECT_THAT(registry.TextExposition(), HasSubstr("items{kind=\"old\"} 1\n"));
  const std::string second = registry.TextExposition();
  EXPECT_THAT(second, HasSubstr("items{kind=\"new\"} 2\n"));
  EXPECT_THAT(second, ::testing::Not(HasSubstr("old")));
}

TEST(MetricsRegistryTest, ConcurrentIncrementsAreNotLost) {
  Registry registry;
  METAOPT_ASSERT_OK_AND_ASSIGN(Family<Counter> * counters,
                               registry.AddCounter("n_total", "n", {"t"}));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Family<Histogram> * histograms,
      registry.AddHistogram("d_seconds", "d", {}, {0.5}));
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        (*counters->WithLabels({"x"}))->Increment();
        (*histograms->WithLabels({}))->Observe(1);
      }
    });
  }
  for (int i = 0; i < 20; ++i) registry.TextExposition();  // scrapes meanwhile
  for (auto& thread : threads) thread.join();
  const std::string text = registry.TextExposition();
  EXPECT_THAT(text, HasSubstr("n_total{t=\"x\"} 40000\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_bucket{le=\"+Inf\"} 40000\n"));
  EXPECT_THAT(text, HasSubstr("d_seconds_sum 40000\n"));
}

TEST(MetricsRegistryTest, FormatSampleValue) {
  EXPECT_EQ(FormatSampleValue(0), "0");
  EXPECT_EQ(FormatSampleValue(-3), "-3");
  EXPECT_EQ(FormatSampleValue(1e15), "1000000000000000");
  EXPECT_EQ(FormatSampleValue(0.001), "0.001");
  EXPECT_EQ(FormatSampleValue(2.5e-7), "2.5e-07");
  EXPECT_EQ(FormatSampleValue(1e300), "1e+300");
  EXPECT_EQ(FormatSampleValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
  EXPECT_EQ(FormatSampleValue(std::nan("")), "NaN");
}

TEST(MetricsRegistryTest, ExponentialBuckets) {
  EXPECT_THAT(ExponentialBuckets(0.001, 2, 4),
              ::testing::ElementsAre(0.001, 0.002, 0.004, 0.008));
}

}  // namespace
}  // namespace metaopt::metrics
