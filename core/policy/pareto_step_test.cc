// The Pareto step's models of further outputs under each output warping.
#include "core/policy/pareto_step.h"

#include <cmath>
#include <memory>
#include <optional>
#include <vector>

#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::policy {
namespace {

using ::metaopt::testing::HpoSpace;
using ::metaopt::testing::HpoValue;
using ::metaopt::testing::IsOk;

class ParetoStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    *spec_.mutable_search_space() = HpoSpace();
    metaopt::testing::SetAccuracyAndFitSeconds(300, &spec_);
    spec_.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
    auto space = space::SearchSpace::Create(spec_.search_space());
    ASSERT_THAT(space, IsOk());
    space_ = std::make_unique<space::SearchSpace>(*std::move(space));
    // Fit times over four orders of magnitude, growing with depth and lr.
    space::Rng rng(3);
    for (int i = 0; i < 30; ++i) {
      v1::Trial trial;
      trial.set_id(i + 1);
      trial.set_state(v1::TRIAL_STATE_COMPLETED);
      *trial.mutable_configuration() = space_->Sample(rng);
      v1::Configuration config = trial.configuration();
      const double lr = std::log10(HpoValue(config, "lr").number()) + 5;
      const double depth = HpoValue(config, "depth").number();
      const double seconds = std::pow(10.0, 0.4 * depth + 0.2 * lr - 2);
      trial.set_value(1 - 0.5 * std::exp(-0.3 * depth - 0.4 * lr));
      (*trial.mutable_metrics())["accuracy"] = trial.value();
      (*trial.mutable_metrics())["fit_seconds"] = seconds;
      (*trial.mutable_metrics())["memory_mb"] = 40.0 * depth;
      trials_.push_back(trial);
    }
  }

  StudyView View() const { return {&spec_, space_.get(), &trials_}; }

  // (log10 lr, depth) of each configuration.
  InputsOf Inputs() const {
    return [](const std::vector<v1::Configuration>& configs)
               -> absl::StatusOr<Eigen::MatrixXd> {
      Eigen::MatrixXd X(configs.size(), 2);
      for (size_t i = 0; i < configs.size(); ++i) {
        v1::Configuration c = configs[i];
        X(i, 0) = std::log10(HpoValue(c, "lr").number());
        X(i, 1) = HpoValue(c, "depth").number();
      }
      return X;
    };
  }

  absl::StatusOr<OutputModel> FitSeconds(std::optional<double> also_warped) {
    space::Rng rng(1);
    return FitOutputModel(View(), Inputs(), Eigen::MatrixXd(0, 2),
                          "fit_seconds", v1::GOAL_MINIMIZE, also_warped, rng);
  }

  v1::StudySpec spec_;
  std::unique_ptr<space::SearchSpace> space_;
  std::vector<v1::Trial> trials_;
};

TEST_F(ParetoStepTest, OutputWarpingOfAnUnsetSpecIsTheDefault) {
  v1::AlgorithmSpec algorithm;
  EXPECT_NE(OutputWarpingOf(algorithm), v1::OUTPUT_WARPING_UNSPECIFIED);
  algorithm.set_output_warping(v1::OUTPUT_WARPING_POWER);
  EXPECT_EQ(OutputWarpingOf(algorithm), v1::OUTPUT_WARPING_POWER);
  algorithm.set_output_warping(v1::OUTPUT_WARPING_NONE);
  EXPECT_EQ(OutputWarpingOf(algorithm), v1::OUTPUT_WARPING_NONE);
}

TEST_F(ParetoStepTest, PowerWarpingModelsAFitTimeNearItsLogarithm) {
  spec_.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_POWER);
  absl::StatusOr<OutputModel> output = FitSeconds(10.0);
  ASSERT_THAT(output, IsOk());
  EXPECT_EQ(output->warp.family(), gp::PowerTransform::Family::kBoxCox);
  EXPECT_NEAR(output->warp.lambda(), 0.0, 0.3) << output->warp.DebugString();
  // The model predicts the warped values: near them at the observations.
  std::vector<v1::Configuration> configs;
  for (const v1::Trial& t : trials_) configs.push_back(t.configuration());
  absl::StatusOr<Eigen::MatrixXd> X = Inputs()(configs);
  ASSERT_THAT(X, IsOk());
  absl::StatusOr<gp::Prediction> at = output->model->Predict(*X);
  ASSERT_THAT(at, IsOk());
  double lo = INFINITY;
  double hi = -INFINITY;
  for (const v1::Trial& t : trials_) {
    const double w = output->warp.Apply(t.metrics().at("fit_seconds"));
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  for (size_t i = 0; i < trials_.size(); ++i) {
    const double w = output->warp.Apply(trials_[i].metrics().at("fit_seconds"));
    EXPECT_NEAR(at->mean[i], w, 0.05 * (hi - lo)) << i;
  }
}

TEST_F(ParetoStepTest, ABoundOutsideTheWarpsDomainLeavesTheOutputUnwarped) {
  spec_.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_POWER);
  absl::StatusOr<OutputModel> output = FitSeconds(0.0);  // Box-Cox needs > 0
  ASSERT_THAT(output, IsOk());
  EXPECT_EQ(output->warp.family(), gp::PowerTransform::Family::kIdentity);
}

TEST_F(ParetoStepTest, WithoutWarpingTheValuesAreModelledAsObserved) {
  spec_.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_NONE);
  absl::StatusOr<OutputModel> output = FitSeconds(10.0);
  ASSERT_THAT(output, IsOk());
  EXPECT_EQ(output->warp.family(), gp::PowerTransform::Family::kIdentity);
}

TEST_F(ParetoStepTest, ConstraintBoundsAreInTheirModelsUnits) {
  for (const v1::OutputWarping warping :
       {v1::OUTPUT_WARPING_NONE, v1::OUTPUT_WARPING_POWER}) {
    spec_.mutable_algorithm()->set_output_warping(warping);
    space::Rng rng(1);
    absl::StatusOr<std::vector<acquisition::ModeledConstraint>> constraints =
        FitConstraintModels(View(), Inputs(), Eigen::MatrixXd(0, 2), rng);
    ASSERT_THAT(constraints, IsOk());
    ASSERT_EQ(constraints->size(), 1u);
    // memory_mb = 40 depth over depth 2..10; the bound 300 lies inside.
    std::vector<double> memory;
    for (const v1::Trial& t : trials_) {
      memory.push_back(t.metrics().at("memory_mb"));
    }
    const gp::PowerTransform expected =
        warping == v1::OUTPUT_WARPING_POWER ? gp::PowerTransform::Fit(memory)
                                            : gp::PowerTransform();
    EXPECT_DOUBLE_EQ((*constraints)[0].bound, expected.Apply(300.0));
    EXPECT_TRUE((*constraints)[0].at_most);
  }
}

// Cost-aware transfer: a prior that knows how the time grows predicts it
// far from the few observations; the GP only corrects an offset.
TEST_F(ParetoStepTest, AnOutputPriorPredictsTheTimeFromFewObservations) {
  trials_.resize(3);
  // ln(seconds) as the prior knows it, off by a constant the GP must learn.
  OutputPrior prior;
  prior.metric = "fit_seconds";
  prior.log_mean = [](const Eigen::MatrixXd& X)
      -> absl::StatusOr<Eigen::VectorXd> {
    const Eigen::ArrayXd lr = X.col(0).array() + 5;
    return ((0.4 * X.col(1).array() + 0.2 * lr - 2) * std::log(10.0) + 0.5)
        .matrix()
        .eval();
  };
  space::Rng rng(1);
  absl::StatusOr<OutputModel> with =
      FitOutputModel(View(), Inputs(), Eigen::MatrixXd(0, 2), "fit_seconds",
                     v1::GOAL_MINIMIZE, 10.0, rng, &prior);
  ASSERT_THAT(with, IsOk());
  EXPECT_EQ(with->warp.family(), gp::PowerTransform::Family::kBoxCox);
  EXPECT_EQ(with->warp.lambda(), 0.0);
  // Far corners of the space, never observed.
  Eigen::MatrixXd far(2, 2);
  far << -5.0, 2.0,  //
      0.0, 10.0;
  absl::StatusOr<gp::Prediction> at = with->model->Predict(far);
  ASSERT_THAT(at, IsOk());
  for (int i = 0; i < 2; ++i) {
    const double truth =
        (0.4 * far(i, 1) + 0.2 * (far(i, 0) + 5) - 2) * std::log(10.0);
    EXPECT_NEAR(at->mean[i], truth, 0.6) << i;
  }
  // Values that are not all positive cannot be logged: no prior then.
  trials_[1].mutable_metrics()->at("fit_seconds") = 0.0;
  absl::StatusOr<OutputModel> zero =
      FitOutputModel(View(), Inputs(), Eigen::MatrixXd(0, 2), "fit_seconds",
                     v1::GOAL_MINIMIZE, 10.0, rng, &prior);
  ASSERT_THAT(zero, IsOk());
  EXPECT_EQ(zero->warp.family(), gp::PowerTransform::Family::kIdentity);
}

// GP-EHVI over a catalogue asks for the log scale of positive further
// objectives: taken when the study leaves output_warping unset, every value
// and the reference are positive and the output is an objective.
TEST_F(ParetoStepTest, LogPositiveModelsAPositiveObjectiveOnTheLogScale) {
  auto fit = [&](std::optional<v1::Goal> goal, double also_warped,
                 bool log_positive) {
    space::Rng rng(1);
    return FitOutputModel(View(), Inputs(), Eigen::MatrixXd(0, 2),
                          "fit_seconds", goal, also_warped, rng, nullptr,
                          log_positive);
  };
  absl::StatusOr<OutputModel> logged = fit(v1::GOAL_MINIMIZE, 10.0, true);
  ASSERT_THAT(logged, IsOk());
  EXPECT_EQ(logged->warp.family(), gp::PowerTransform::Family::kBoxCox);
  EXPECT_EQ(logged->warp.lambda(), 0.0);
  EXPECT_DOUBLE_EQ(logged->warp.Apply(10.0), std::log(10.0));
  // The model predicts the logged times: near them at the observations.
  std::vector<v1::Configuration> configs;
  for (const v1::Trial& t : trials_) configs.push_back(t.configuration());
  absl::StatusOr<Eigen::MatrixXd> X = Inputs()(configs);
  ASSERT_THAT(X, IsOk());
  absl::StatusOr<gp::Prediction> at = logged->model->Predict(*X);
  ASSERT_THAT(at, IsOk());
  for (size_t i = 0; i < trials_.size(); ++i) {
    EXPECT_NEAR(at->mean[i], std::log(trials_[i].metrics().at("fit_seconds")),
                0.05)
        << i;
  }
  // Not asked for, a constrained metric (no goal), a reference that is not
  // positive, an explicit output warping: the values as observed.
  const gp::PowerTransform::Family identity =
      gp::PowerTransform::Family::kIdentity;
  absl::StatusOr<OutputModel> raw = fit(v1::GOAL_MINIMIZE, 10.0, false);
  ASSERT_THAT(raw, IsOk());
  EXPECT_EQ(raw->warp.family(), identity);
  absl::StatusOr<OutputModel> constrained = fit(std::nullopt, 10.0, true);
  ASSERT_THAT(constrained, IsOk());
  EXPECT_EQ(constrained->warp.family(), identity);
  absl::StatusOr<OutputModel> zero_reference =
      fit(v1::GOAL_MINIMIZE, 0.0, true);
  ASSERT_THAT(zero_reference, IsOk());
  EXPECT_EQ(zero_reference->warp.family(), identity);
  spec_.mutable_algorithm()->set_output_warping(v1::OUTPUT_WARPING_NONE);
  absl::StatusOr<OutputModel> none = fit(v1::GOAL_MINIMIZE, 10.0, true);
  ASSERT_THAT(none, IsOk());
  EXPECT_EQ(none->warp.family(), identity);
  // A time of 0 cannot be logged.
  spec_.mutable_algorithm()->clear_output_warping();
  trials_[1].mutable_metrics()->at("fit_seconds") = 0.0;
  absl::StatusOr<OutputModel> with_zero = fit(v1::GOAL_MINIMIZE, 10.0, true);
  ASSERT_THAT(with_zero, IsOk());
  EXPECT_EQ(with_zero->warp.family(), identity);
}

}  // namespace
}  // namespace metaopt::policy
