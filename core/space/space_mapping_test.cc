// Partial binding: which study spaces a model's space serves, what the
// mapping reports, and the model space extended by new algorithms.
#include "core/space/space_mapping.h"

#include <functional>
#include <string>
#include <vector>

#include "core/space/encoding.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::space {
namespace {

using ::metaopt::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

v1::SearchSpace ModelSpace() {
  v1::SearchSpace space;
  google::protobuf::TextFormat::ParseFromString(
      R"pb(
        stages {
          name: "scaler"
          algorithms { name: "none" }
          algorithms { name: "standard" }
        }
        stages {
          name: "model"
          algorithms {
            name: "svm"
            parameters {
              name: "C"
              float_domain { low: 0.01 high: 100 log: true }
            }
            parameters {
              name: "kernel"
              categorical_domain {
                values: "rbf"
                values: "linear"
                values: "poly"
              }
            }
          }
          algorithms {
            name: "knn"
            parameters {
              name: "k"
              int_domain { low: 1 high: 30 }
            }
          }
        }
      )pb",
      &space);
  return space;
}

v1::Parameter* Param(v1::SearchSpace& s, int stage, int algorithm, int p) {
  return s.mutable_stages(stage)
      ->mutable_algorithms(algorithm)
      ->mutable_parameters(p);
}

TEST(MapStudySpaceTest, IdenticalSpacesMapExactly) {
  METAOPT_ASSERT_OK_AND_ASSIGN(SpaceMapping mapping,
                               MapStudySpace(ModelSpace(), ModelSpace()));
  EXPECT_TRUE(mapping.identical());
  // Another order of categorical values or of a stage's algorithms is the
  // same space.
  v1::SearchSpace study = ModelSpace();
  Param(study, 1, 0, 1)
      ->mutable_categorical_domain()
      ->mutable_values()
      ->SwapElements(0, 2);
  study.mutable_stages(1)->mutable_algorithms()->SwapElements(0, 1);
  METAOPT_ASSERT_OK_AND_ASSIGN(mapping, MapStudySpace(ModelSpace(), study));
  EXPECT_TRUE(mapping.identical());
}

TEST(MapStudySpaceTest, ReportsNewMaskedAndNarrowed) {
  v1::SearchSpace study = ModelSpace();
  // Drop "none" from the scaler, add "rf" to the model stage.
  study.mutable_stages(0)->mutable_algorithms()->DeleteSubrange(0, 1);
  v1::Algorithm* rf = study.mutable_stages(1)->add_algorithms();
  rf->set_name("rf");
  rf->add_parameters()->set_name("depth");
  rf->mutable_parameters(0)->mutable_int_domain()->set_low(1);
  rf->mutable_parameters(0)->mutable_int_domain()->set_high(20);
  // Narrow C, switch its log flag off; fewer kernels; narrow k.
  Param(study, 1, 0, 0)->mutable_float_domain()->set_low(0.1);
  Param(study, 1, 0, 0)->mutable_float_domain()->set_log(false);
  Param(study, 1, 0, 1)
      ->mutable_categorical_domain()
      ->mutable_values()
      ->RemoveLast();
  Param(study, 1, 1, 0)->mutable_int_domain()->set_high(10);
  METAOPT_ASSERT_OK_AND_ASSIGN(SpaceMapping mapping,
                               MapStudySpace(ModelSpace(), study));
  EXPECT_FALSE(mapping.identical());
  EXPECT_THAT(mapping.new_algorithms, ElementsAre("model/rf"));
  EXPECT_THAT(mapping.masked_algorithms, ElementsAre("scaler/none"));
  EXPECT_THAT(
      mapping.narrowed_parameters,
      ElementsAre("model/svm/C [0.1, 100] within [0.01, 100] log",
                  "model/svm/kernel {rbf,linear} within {rbf,linear,poly}",
                  "model/knn/k [1, 10] within [1, 30]"));

  // The extended space: the model's, with rf appended to its stage.
  const v1::SearchSpace extended = ExtendedModelSpace(ModelSpace(), study);
  ASSERT_EQ(extended.stages(1).algorithms_size(), 3);
  EXPECT_EQ(extended.stages(1).algorithms(2).name(), "rf");
  EXPECT_EQ(extended.stages(0).algorithms_size(), 2);  // masked ones stay
  EXPECT_EQ(extended.stages(1).algorithms(0).parameters(0).float_domain().low(),
            0.01);
  METAOPT_ASSERT_OK_AND_ASSIGN(SpaceMapping none,
                               MapStudySpace(ModelSpace(), ModelSpace()));
  EXPECT_THAT(none.new_algorithms, IsEmpty());
  EXPECT_EQ(ExtendedModelSpace(ModelSpace(), ModelSpace()).DebugString(),
            ModelSpace().DebugString());
}

TEST(MapStudySpaceTest, IncompatibleSpacesNameTheFirstViolation) {
  struct Case {
    std::string description;
    std::function<void(v1::SearchSpace&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"stage name",
       [](v1::SearchSpace& s) { s.mutable_stages(1)->set_name("clf"); },
       "stage[1] is \"model\" in the model, \"clf\" in the study"},
      {"extra stage",
       [](v1::SearchSpace& s) {
         *s.add_stages() = s.stages(0);
         s.mutable_stages(2)->set_name("post");
       },
       "stage[2] \"post\" is in the study only"},
      {"missing stage",
       [](v1::SearchSpace& s) { s.mutable_stages()->RemoveLast(); },
       "stage[1] \"model\" is in the model only"},
      {"no shared algorithm",
       [](v1::SearchSpace& s) {
         s.mutable_stages(1)->mutable_algorithms(0)->set_name("rf");
         s.mutable_stages(1)->mutable_algorithms(1)->set_name("gbt");
       },
       "stage[1] \"model\": no algorithm in common with the model's (\"svm\", "
       "...)"},
      {"parameter name",
       [](v1::SearchSpace& s) { Param(s, 1, 1, 0)->set_name("n"); },
       "stage[1] \"model\": algorithm \"knn\": parameter[0] is \"k\" in the "
       "model, "
       "\"n\" in the study"},
      {"extra parameter",
       [](v1::SearchSpace& s) {
         v1::Parameter* p =
             s.mutable_stages(1)->mutable_algorithms(1)->add_parameters();
         p->set_name("p");
         p->mutable_float_domain()->set_high(1);
       },
       "stage[1] \"model\": algorithm \"knn\": parameter[1] \"p\" is in the "
       "study only"},
      {"domain type",
       [](v1::SearchSpace& s) {
         Param(s, 1, 1, 0)->mutable_float_domain()->set_high(30);
       },
       "stage[1] \"model\": algorithm \"knn\": parameter[0] \"k\": int in the "
       "model, "
       "float in the study"},
      {"wider range",
       [](v1::SearchSpace& s) {
         Param(s, 1, 0, 0)->mutable_float_domain()->set_high(1000);
       },
       "stage[1] \"model\": algorithm \"svm\": parameter[0] \"C\": the study's "
       "range "
       "[0.01, 1000] log is not within the model's [0.01, 100] log"},
      {"new categorical value",
       [](v1::SearchSpace& s) {
         Param(s, 1, 0, 1)->mutable_categorical_domain()->add_values("sigmoid");
       },
       "stage[1] \"model\": algorithm \"svm\": parameter[1] \"kernel\": value "
       "\"sigmoid\" is in the study only"},
  };
  for (const Case& c : cases) {
    v1::SearchSpace study = ModelSpace();
    c.change(study);
    EXPECT_THAT(
        MapStudySpace(ModelSpace(), study),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.message)))
        << c.description;
  }
}

// The model's encoder reads a narrowed or re-flagged study value in the
// model's own scale, whatever the study declares.
TEST(MapStudySpaceTest, ModelEncoderScalesStudyValuesInTheModelsSpace) {
  v1::SearchSpace study = ModelSpace();
  Param(study, 1, 0, 0)->mutable_float_domain()->set_low(1);
  Param(study, 1, 0, 0)->mutable_float_domain()->set_log(false);
  Param(study, 1, 0, 1)
      ->mutable_categorical_domain()
      ->mutable_values()
      ->SwapElements(0, 2);
  METAOPT_ASSERT_OK(MapStudySpace(ModelSpace(), study).status());
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace model_space,
                               SearchSpace::Create(ModelSpace()));
  METAOPT_ASSERT_OK_AND_ASSIGN(SearchSpace study_space,
                               SearchSpace::Create(study));
  v1::Configuration c;
  google::protobuf::TextFormat::ParseFromString(
      R"pb(
        assignments { stage: "scaler" algorithm: "none" }
        assignments {
          stage: "model"
          algorithm: "svm"
          parameters {
            key: "C"
            value { number: 10 }
          }
          parameters {
            key: "kernel"
            value { category: "poly" }
          }
        }
      )pb",
      &c);
  METAOPT_ASSERT_OK_AND_ASSIGN(v1::Configuration canonical,
                               study_space.Canonicalize(c, "c"));
  const Encoder encoder(model_space);
  const Eigen::VectorXd x = encoder.Encode(canonical);
  const EncodingLayout& layout = encoder.layout();
  const int offset = layout.block(1, 0).offset;
  // log10(10) in log10 [0.01, 100]: 0.75 (the study's linear [1, 100] would
  // give 0.0909).
  EXPECT_NEAR(x[offset], 0.75, 1e-12);
  // "poly" is the model's third value (the study's first).
  EXPECT_EQ(x[offset + 1], 0.0);
  EXPECT_EQ(x[offset + 2], 0.0);
  EXPECT_EQ(x[offset + 3], 1.0);
}

}  // namespace
}  // namespace metaopt::space
