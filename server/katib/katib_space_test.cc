// The Katib parameter specs and settings mapped to metaopt's study spec.
#include "server/katib/katib_space.h"

#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "server/katib/katib_service.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::server::katib {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

kapi::Experiment ParseExperiment(const std::string& text) {
  kapi::Experiment experiment;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &experiment))
      << text;
  return experiment;
}

constexpr char kPlain[] = R"pb(
  name: "exp"
  spec {
    parameter_specs {
      parameters {
        name: "lr"
        parameter_type: DOUBLE
        feasible_space { min: "0.0001" max: "0.1" distribution: LOG_UNIFORM }
      }
      parameters {
        name: "layers"
        parameter_type: INT
        feasible_space { min: "1" max: "9" step: "2" }
      }
      parameters {
        name: "batch"
        parameter_type: DISCRETE
        feasible_space { list: "16" list: "32" list: "64" }
      }
      parameters {
        name: "optimizer"
        parameter_type: CATEGORICAL
        feasible_space { list: "sgd" list: "adam" }
      }
    }
    objective { type: MAXIMIZE objective_metric_name: "accuracy" }
    algorithm {
      algorithm_name: "metaopt-gp"
      algorithm_settings { name: "initial_trials" value: "4" }
    }
  }
)pb";

TEST(KatibSpaceTest, MapsPlainParametersToOneStage) {
  const kapi::Experiment experiment = ParseExperiment(kPlain);
  absl::StatusOr<v1::StudySpec> spec = StudySpecOf(experiment, "katib-ns-exp");
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->search_space().stages_size(), 1);
  const v1::Algorithm& algorithm = spec->search_space().stages(0).algorithms(0);
  ASSERT_EQ(algorithm.parameters_size(), 4);
  EXPECT_TRUE(algorithm.parameters(0).float_domain().log());
  EXPECT_EQ(algorithm.parameters(1).int_domain().high(), 9);
  EXPECT_EQ(algorithm.parameters(2).categorical_domain().values_size(), 3);
  EXPECT_EQ(spec->objective().goal(), v1::GOAL_MAXIMIZE);
  EXPECT_EQ(spec->algorithm().kind(), v1::ALGORITHM_KIND_GP);
  EXPECT_EQ(spec->algorithm().initial_trials(), 4);
}

TEST(KatibSpaceTest, RoundTripsAssignmentsOnTheStepGrid) {
  const kapi::Experiment experiment = ParseExperiment(kPlain);
  absl::StatusOr<KatibSpace> space =
      KatibSpace::Create(experiment.spec().parameter_specs(), "specs");
  ASSERT_TRUE(space.ok()) << space.status();
  v1::Configuration configuration;
  v1::Assignment* assignment = configuration.add_assignments();
  assignment->set_stage("katib");
  (*assignment->mutable_parameters())["lr"].set_number(0.001234567);
  (*assignment->mutable_parameters())["layers"].set_number(4);
  (*assignment->mutable_parameters())["batch"].set_category("32");
  (*assignment->mutable_parameters())["optimizer"].set_category("adam");
  absl::StatusOr<std::vector<kapi::ParameterAssignment>> assignments =
      space->ToAssignments(configuration);
  ASSERT_TRUE(assignments.ok()) << assignments.status();
  EXPECT_EQ((*assignments)[0].value(), "0.001234567");
  EXPECT_EQ((*assignments)[1].value(), "5");  // 1 + 2k, nearest to 4 upwards
  google::protobuf::RepeatedPtrField<kapi::ParameterAssignment> field(
      assignments->begin(), assignments->end());
  absl::StatusOr<v1::Configuration> back =
      space->FromAssignments(field, "assignments");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(space->Key(*back), space->Key(configuration));
  // A DISCRETE value is matched to its listed spelling by value.
  field[2].set_value("32.0");
  back = space->FromAssignments(field, "assignments");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->assignments(0).parameters().at("batch").category(), "32");
}

TEST(KatibSpaceTest, MapsPipelineConventionToStages) {
  kapi::Experiment experiment = ParseExperiment(R"pb(
    name: "pipe"
    spec {
      parameter_specs {
        parameters {
          name: "scaler"
          parameter_type: CATEGORICAL
          feasible_space { list: "none" list: "standard" }
        }
        parameters {
          name: "estimator"
          parameter_type: CATEGORICAL
          feasible_space { list: "svc" list: "knn" }
        }
        parameters {
          name: "estimator.svc.C"
          parameter_type: DOUBLE
          feasible_space { min: "0.01" max: "100" distribution: LOG_UNIFORM }
        }
        parameters {
          name: "estimator.knn.k"
          parameter_type: INT
          feasible_space { min: "1" max: "50" }
        }
      }
      objective { type: MINIMIZE objective_metric_name: "loss" }
      algorithm { algorithm_name: "metaopt-deeppipe" }
    }
  )pb");
  absl::StatusOr<KatibSpace> space =
      KatibSpace::Create(experiment.spec().parameter_specs(), "specs");
  ASSERT_TRUE(space.ok()) << space.status();
  ASSERT_EQ(space->search_space().stages_size(), 2);
  EXPECT_EQ(space->search_space().stages(1).algorithms(0).parameters(0).name(),
            "C");
  google::protobuf::RepeatedPtrField<kapi::ParameterAssignment> assignments;
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{
           {"scaler", "standard"},
           {"estimator", "knn"},
           {"estimator.svc.C", "0.01"},
           {"estimator.knn.k", "7"}}) {
    kapi::ParameterAssignment* assignment = assignments.Add();
    assignment->set_name(name);
    assignment->set_value(value);
  }
  absl::StatusOr<v1::Configuration> configuration =
      space->FromAssignments(assignments, "assignments");
  ASSERT_TRUE(configuration.ok()) << configuration.status();
  EXPECT_EQ(configuration->assignments(1).algorithm(), "knn");
  EXPECT_EQ(configuration->assignments(1).parameters_size(), 1);
  EXPECT_EQ(space->Key(*configuration),
            "scaler=standard\nestimator=knn\nestimator.knn.k=7\n");

  experiment.mutable_spec()
      ->mutable_parameter_specs()
      ->mutable_parameters(2)
      ->set_name("estimator.rf.C");
  EXPECT_THAT(
      KatibSpace::Create(experiment.spec().parameter_specs(), "specs").status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("does not list algorithm \"rf\"")));
}

TEST(KatibSpaceTest, RejectsBadSpecsNamingFieldValueAndRule) {
  kapi::Experiment experiment = ParseExperiment(kPlain);
  kapi::FeasibleSpace* lr = experiment.mutable_spec()
                                ->mutable_parameter_specs()
                                ->mutable_parameters(0)
                                ->mutable_feasible_space();
  lr->set_min("0");
  EXPECT_THAT(StudySpecOf(experiment, "s").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("parameters[0].feasible_space: min 0 must be "
                                 "> 0 with a logarithmic distribution")));
  lr->set_min("0.5");
  EXPECT_THAT(StudySpecOf(experiment, "s").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("min 0.5 must be < max 0.1")));
}

TEST(KatibSpaceTest, RejectsBadAlgorithmSettings) {
  kapi::Experiment experiment = ParseExperiment(kPlain);
  kapi::AlgorithmSpec* algorithm =
      experiment.mutable_spec()->mutable_algorithm();
  algorithm->mutable_algorithm_settings(0)->set_value("-1");
  EXPECT_THAT(
      StudySpecOf(experiment, "s").status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("algorithm_settings[0] \"initial_trials\": value "
                         "\"-1\" is not an integer in [0, 10000]")));
  algorithm->mutable_algorithm_settings(0)->set_name("learning_rate");
  EXPECT_THAT(StudySpecOf(experiment, "s").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown setting \"learning_rate\"")));
  algorithm->mutable_algorithm_settings(0)->set_name("mosaic_exploration");
  algorithm->mutable_algorithm_settings(0)->set_value("1.3");
  EXPECT_THAT(StudySpecOf(experiment, "s").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("applies to algorithm metaopt-mosaic only")));
  algorithm->set_algorithm_name("tpe");
  EXPECT_THAT(StudySpecOf(experiment, "s").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("algorithm_name: \"tpe\" is not one of")));
}

TEST(KatibSpaceTest, StudyIdsComeFromNamespaceAndName) {
  EXPECT_EQ(*StudyIdOf("team-a", "mnist"), "katib-team-a-mnist");
  const absl::StatusOr<std::string> long_id =
      StudyIdOf(std::string(63, 'n'), std::string(63, 'e'));
  ASSERT_TRUE(long_id.ok());
  EXPECT_EQ(long_id->size(), 128u);
  EXPECT_THAT(StudyIdOf("ns", "a/b").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("outside [A-Za-z0-9._-]")));
}

TEST(KatibSpaceTest, FormatsNumbersShortestRoundTrip) {
  EXPECT_EQ(FormatNumber(0.1), "0.1");
  EXPECT_EQ(FormatNumber(3), "3");
  EXPECT_EQ(FormatNumber(1.0 / 3), "0.3333333333333333");
}

TEST(KatibNamespaceTest, ComesFromTheServiceHostKatibDials) {
  KatibOptions options;
  options.ns = "fallback";
  const KatibAdapter adapter(nullptr, options);
  EXPECT_EQ(adapter.NamespaceOf("mnist-metaopt-gp.team-a:6789"), "team-a");
  EXPECT_EQ(adapter.NamespaceOf("mnist-metaopt-gp.team-a.svc:6789"), "team-a");
  EXPECT_EQ(
      adapter.NamespaceOf("mnist-metaopt-gp.team-a.svc.cluster.local:6789"),
      "team-a");
  EXPECT_EQ(adapter.NamespaceOf("127.0.0.1:6789"), "fallback");
  EXPECT_EQ(adapter.NamespaceOf("localhost:6789"), "fallback");
  EXPECT_EQ(adapter.NamespaceOf("[::1]:6789"), "fallback");
  EXPECT_EQ(adapter.NamespaceOf("metaopt.example.com:6789"), "fallback");
  EXPECT_EQ(adapter.NamespaceOf(""), "fallback");
}

}  // namespace
}  // namespace metaopt::server::katib
