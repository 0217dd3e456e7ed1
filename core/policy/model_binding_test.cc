// Binding studies to registry models: kinds, search-space matching and its
// messages, the model a new study binds to and the one a stored study keeps.
#include "core/policy/model_binding.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/registry/artifact.h"
#include "core/registry/model_manager.h"
#include "tests/testutil/test_artifacts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::policy {
namespace {

using ::metaopt::registry::LoadedModel;
using ::metaopt::registry::ModelManager;
using ::metaopt::registry::Servable;
using ::metaopt::registry::WriteModelVersion;
using ::metaopt::registry::testing::TestArtifact;
using ::metaopt::registry::testing::TestSearchSpace;
using ::metaopt::testing::IsOk;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// ---- Search spaces ----

v1::Parameter* FindParameter(v1::SearchSpace& space, int stage, int algorithm,
                             int parameter) {
  return space.mutable_stages(stage)
      ->mutable_algorithms(algorithm)
      ->mutable_parameters(parameter);
}

TEST(CheckMatchesTest, NarrowedRangesOtherLogFlagsAndValueOrdersMatch) {
  v1::SearchSpace study = TestSearchSpace();
  FindParameter(study, 0, 1, 0)
      ->mutable_int_domain()
      ->set_high(5);  // n_components
  FindParameter(study, 1, 1, 0)
      ->mutable_float_domain()
      ->set_low(1e-2);  // learning_rate
  FindParameter(study, 1, 1, 0)->mutable_float_domain()->set_log(false);
  auto* criterion = FindParameter(study, 1, 0, 1)
                        ->mutable_categorical_domain();  // order differs
  criterion->mutable_values()->SwapElements(0, 1);
  EXPECT_THAT(CheckMatches(TestSearchSpace(), study), IsOk());
  // Added and dropped algorithms match too (the model kind decides,
  // CheckPartialBinding).
  study.mutable_stages(1)->mutable_algorithms(1)->set_name("SVM");
  EXPECT_THAT(CheckMatches(TestSearchSpace(), study), IsOk());
}

// The rules and every message are space::MapStudySpace's (its test); here
// the prefix and a few cases.
TEST(CheckMatchesTest, NamesFirstMismatch) {
  struct Case {
    std::string description;
    std::function<void(v1::SearchSpace&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"stage name",
       [](v1::SearchSpace& s) { s.mutable_stages(1)->set_name("classifier"); },
       "stage[1] is \"estimator\" in the model, \"classifier\" in the study"},
      {"no algorithm in common",
       [](v1::SearchSpace& s) {
         s.mutable_stages(1)->mutable_algorithms(0)->set_name("SVM");
         s.mutable_stages(1)->mutable_algorithms(1)->set_name("KNN");
       },
       "stage[1] \"estimator\": no algorithm in common with the model's "
       "(\"RF\", ...)"},
      {"wider range",
       [](v1::SearchSpace& s) {
         FindParameter(s, 1, 0, 0)->mutable_int_domain()->set_high(2000);
       },
       "stage[1] \"estimator\": algorithm \"RF\": parameter[0] "
       "\"n_estimators\": the study's range [10, 2000] is not within the "
       "model's [10, 500]"},
  };
  for (const Case& c : cases) {
    v1::SearchSpace study = TestSearchSpace();
    c.change(study);
    EXPECT_THAT(CheckMatches(TestSearchSpace(), study),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("search spaces do not match: " + c.message)))
        << c.description;
  }
}

// ---- Models ----

// A manager without a poll thread over a fresh registry directory.
class ModelBindingTest : public ::testing::Test {
 protected:
  // Publishes `artifact` as the next version of `name`, and serves it.
  void Serve(const std::string& name,
             const v1::ModelArtifact& artifact = TestArtifact()) {
    ASSERT_THAT(WriteModelVersion(registry_.path(), name, artifact), IsOk());
    ASSERT_THAT(manager_->PollOnce(), IsOk());
  }

  // A GP study over `space` that names `model` ("": binds by itself).
  static v1::StudySpec Spec(const v1::SearchSpace& space,
                            const std::string& model = "") {
    v1::StudySpec spec;
    spec.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_GP);
    spec.mutable_algorithm()->set_model(model);
    *spec.mutable_search_space() = space;
    return spec;
  }

  // The reference of the model a binding holds; "none" for none.
  static std::string Bound(const absl::StatusOr<ModelBinding>& binding) {
    EXPECT_THAT(binding, IsOk());
    if (!binding.ok()) return "error";
    return binding->model == nullptr ? "none" : binding->model->reference();
  }

  ScopedTempDir registry_;
  std::unique_ptr<ModelManager> manager_ =
      ModelManager::Create({registry_.path()}).value();
};

TEST_F(ModelBindingTest, CheckMatchesNamesTheModel) {
  Serve("oboe-portfolio");
  Serve("oboe-portfolio");
  Serve("oboe-portfolio");
  v1::SearchSpace study = TestSearchSpace();
  study.mutable_stages(1)->mutable_algorithms(1)->set_name("KNN");
  study.mutable_stages(1)->mutable_algorithms(0)->set_name("SVM");
  EXPECT_THAT(CheckMatches(*manager_->Get("oboe-portfolio"), study),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "model \"oboe-portfolio@3\" does not match the study's "
                       "space: stage[1] \"estimator\": no algorithm in common "
                       "with the model's (\"RF\", ...)"));
}

TEST_F(ModelBindingTest, UnnamedBindsTheFirstMatchingServedModelByName) {
  Serve("zz-match");
  Serve("aa-match");
  v1::ModelArtifact other = TestArtifact();
  other.mutable_search_space()->mutable_stages(0)->set_name("scaler");
  other.mutable_portfolio(0)->mutable_assignments(0)->set_stage("scaler");
  other.mutable_portfolio(1)->mutable_assignments(0)->set_stage("scaler");
  Serve("00-other", other);

  v1::SearchSpace study = TestSearchSpace();
  FindParameter(study, 1, 0, 0)->mutable_int_domain()->set_high(200);
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(study))), "aa-match@1");
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(other.search_space()))),
            "00-other@1");
  study.mutable_stages()->RemoveLast();
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(study))), "none");
  EXPECT_EQ(Bound(BindModel(nullptr, Spec(TestSearchSpace()))), "none");
  // RANDOM uses only named models.
  v1::StudySpec random = Spec(TestSearchSpace());
  random.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_RANDOM);
  EXPECT_EQ(Bound(BindModel(manager_.get(), random)), "none");
}

// A meta-learned kind that binds to no model records why; a GP study, which
// needs no model, records nothing.
TEST_F(ModelBindingTest, UnboundMetaLearnedKindSaysWhy) {
  Serve("oboe-portfolio");
  v1::StudySpec deeppipe = Spec(TestSearchSpace());
  deeppipe.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_DEEPPIPE);
  absl::StatusOr<ModelBinding> unbound = BindModel(manager_.get(), deeppipe);
  EXPECT_EQ(Bound(unbound), "none");
  EXPECT_THAT(unbound->unbound_reason,
              HasSubstr("no model that ALGORITHM_KIND_DEEPPIPE binds to"));
  const std::map<std::string, std::string> metadata = unbound->Metadata();
  EXPECT_EQ(metadata.at("binding"), "none");
  EXPECT_EQ(metadata.at("binding_reason"), unbound->unbound_reason);

  v1::SearchSpace other = TestSearchSpace();
  other.mutable_stages()->RemoveLast();
  absl::StatusOr<ModelBinding> gp = BindModel(manager_.get(), Spec(other));
  EXPECT_EQ(Bound(gp), "none");
  EXPECT_EQ(gp->unbound_reason, "");
  EXPECT_TRUE(gp->Metadata().empty());
  // Named "none": the user chose no model.
  deeppipe.mutable_algorithm()->set_model("none");
  EXPECT_TRUE(BindModel(manager_.get(), deeppipe)->Metadata().empty());
}

TEST_F(ModelBindingTest, NamedModelMustExistAndMatch) {
  Serve("m");
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(TestSearchSpace(), "m@1"))),
            "m@1");
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(TestSearchSpace(), "none"))),
            "none");
  v1::SearchSpace study = TestSearchSpace();
  study.mutable_stages()->RemoveLast();
  EXPECT_THAT(BindModel(manager_.get(), Spec(study, "m")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.algorithm.model: model \"m@1\" does "
                                 "not match the study's space")));
  EXPECT_THAT(BindModel(manager_.get(), Spec(TestSearchSpace(), "absent")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("spec.algorithm.model: ")));
  EXPECT_THAT(BindModel(nullptr, Spec(TestSearchSpace(), "m")),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("the server has no model registry")));
  v1::StudySpec pmf = Spec(TestSearchSpace(), "m");
  pmf.mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_PMF);
  EXPECT_THAT(BindModel(manager_.get(), pmf),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("MODEL_KIND_PORTFOLIO model cannot serve "
                                 "ALGORITHM_KIND_PMF")));
}

TEST_F(ModelBindingTest, StoredStudyKeepsItsVersionOrFails) {
  Serve("m");
  Serve("m");
  v1::Study study;
  study.set_study_id("s");
  EXPECT_EQ(Bound(StoredBinding(manager_.get(), study)), "none");
  study.set_bound_model("m@1");
  EXPECT_EQ(Bound(StoredBinding(manager_.get(), study)), "m@1");
  study.set_bound_model("m@7");
  EXPECT_THAT(StoredBinding(manager_.get(), study),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "study \"s\" is bound to model m@7, which the registry "
                       "can no longer load; restore that version or delete "
                       "the study"));
  EXPECT_THAT(
      StoredBinding(nullptr, study),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("m@7")));
}

TEST_F(ModelBindingTest,
       PartialBindingPrefersAnExactModelAndRecordsTheMapping) {
  // "aa-narrow" serves a wider space than the study's; "zz-exact" the same.
  v1::ModelArtifact wide = TestArtifact();
  FindParameter(*wide.mutable_search_space(), 1, 0, 0)
      ->mutable_int_domain()
      ->set_high(1000);
  v1::Algorithm* svm =
      wide.mutable_search_space()->mutable_stages(1)->add_algorithms();
  svm->set_name("SVM");
  Serve("aa-wide", wide);
  Serve("zz-exact");
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(TestSearchSpace()))),
            "zz-exact@1");
  METAOPT_ASSERT_OK_AND_ASSIGN(
      ModelBinding named,
      BindModel(manager_.get(), Spec(TestSearchSpace(), "aa-wide")));
  EXPECT_EQ(named.model->reference(), "aa-wide@1");
  EXPECT_EQ(named.Metadata(),
            (std::map<std::string, std::string>{
                {"binding", "partial"},
                {"binding_new_algorithms", "none"},
                {"binding_masked_algorithms", "estimator/SVM"},
                {"binding_narrowed_parameters",
                 "estimator/RF/n_estimators [10, 500] within [10, 1000]"}}));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      ModelBinding exact,
      BindModel(manager_.get(), Spec(TestSearchSpace(), "zz-exact")));
  EXPECT_EQ(exact.Metadata(),
            (std::map<std::string, std::string>{{"binding", "exact"}}));
  EXPECT_TRUE(ModelBinding().Metadata().empty());
  // A study over a space wider than the only model's binds to none.
  v1::SearchSpace wider = TestSearchSpace();
  FindParameter(wider, 1, 0, 0)->mutable_int_domain()->set_high(5000);
  EXPECT_EQ(Bound(BindModel(manager_.get(), Spec(wider))), "none");
  EXPECT_THAT(BindModel(manager_.get(), Spec(wider, "zz-exact")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("spec.algorithm.model: model \"zz-exact@1\" "
                                 "does not match the study's space: stage[1] "
                                 "\"estimator\": algorithm \"RF\": "
                                 "parameter[0] \"n_estimators\": the study's "
                                 "range [10, 5000] is not within the model's "
                                 "[10, 500]")));
}

// A study space with one more estimator than the model's.
v1::SearchSpace SpaceWithNewAlgorithm() {
  v1::SearchSpace study = TestSearchSpace();
  v1::Algorithm* svm = study.mutable_stages(1)->add_algorithms();
  svm->set_name("SVM");
  v1::Parameter* c = svm->add_parameters();
  c->set_name("C");
  c->mutable_float_domain()->set_low(0.1);
  c->mutable_float_domain()->set_high(10);
  return study;
}

std::shared_ptr<const LoadedModel> ModelOfKind(v1::ModelKind kind,
                                               int encoder_layers) {
  v1::ModelArtifact artifact = TestArtifact();
  artifact.set_kind(kind);
  if (kind == v1::MODEL_KIND_DEEPPIPE) {
    (*artifact.mutable_int_options())["encoder_layers"] = encoder_layers;
  }
  // Not decoded (its tensors are no model of `kind`): binding reads only the
  // artifact.
  return std::make_shared<const LoadedModel>(
      "m", 2, artifact, v1::ModelManifest(),
      space::SearchSpace::Create(TestSearchSpace()).value(), absl::UnixEpoch(),
      Servable());
}

TEST(PartialBindingTest, NewAlgorithmsNeedAKindThatLearnsThem) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      space::SpaceMapping mapping,
      space::MapStudySpace(TestSearchSpace(), SpaceWithNewAlgorithm()));
  ASSERT_EQ(mapping.new_algorithms.size(), 1u);
  auto algorithm = [](v1::AlgorithmKind kind) {
    v1::AlgorithmSpec spec;
    spec.set_kind(kind);
    return spec;
  };
  v1::AlgorithmSpec mosaic = algorithm(v1::ALGORITHM_KIND_MOSAIC);
  mosaic.mutable_mosaic()->set_surrogate(v1::MOSAIC_SURROGATE_DEEPPIPE);
  struct Case {
    v1::AlgorithmSpec algorithm;
    std::shared_ptr<const LoadedModel> model;
    std::string error;  // empty: binds
  };
  const std::string prefix =
      "model \"m@2\" cannot serve algorithm \"estimator/SVM\", which the "
      "model was not trained on: ";
  const std::vector<Case> cases = {
      {algorithm(v1::ALGORITHM_KIND_DEEPPIPE),
       ModelOfKind(v1::MODEL_KIND_DEEPPIPE, 1), ""},
      {algorithm(v1::ALGORITHM_KIND_DEEPPIPE),
       ModelOfKind(v1::MODEL_KIND_DEEPPIPE, 0),
       prefix +
           "the model has no per-algorithm encoders (encoder_layers 0); train "
           "one with --encoder-layers 1 or more"},
      {algorithm(v1::ALGORITHM_KIND_GP),
       ModelOfKind(v1::MODEL_KIND_DEEPPIPE, 0), ""},
      {algorithm(v1::ALGORITHM_KIND_GP),
       ModelOfKind(v1::MODEL_KIND_PORTFOLIO, 0), ""},
      {mosaic, ModelOfKind(v1::MODEL_KIND_DEEPPIPE, 1),
       prefix +
           "Mosaic's DeepPipe surrogate fine-tunes the kernel only and cannot "
           "learn a new algorithm's encoder; use ALGORITHM_KIND_DEEPPIPE"},
      {algorithm(v1::ALGORITHM_KIND_PMF), ModelOfKind(v1::MODEL_KIND_PMF, 0),
       prefix + "a PMF model predicts only its catalogue's configurations"},
      {algorithm(v1::ALGORITHM_KIND_GROSI),
       ModelOfKind(v1::MODEL_KIND_GROSI, 0),
       prefix + "a GROSI model reads a fixed configuration encoding"},
  };
  for (const Case& c : cases) {
    absl::Status status = CheckPartialBinding(c.algorithm, *c.model, mapping);
    if (c.error.empty()) {
      EXPECT_THAT(status, IsOk());
    } else {
      EXPECT_THAT(status,
                  StatusIs(absl::StatusCode::kInvalidArgument, c.error));
    }
  }
  // Without new algorithms every kind binds partially.
  v1::SearchSpace narrowed = TestSearchSpace();
  FindParameter(narrowed, 1, 0, 0)->mutable_int_domain()->set_high(100);
  METAOPT_ASSERT_OK_AND_ASSIGN(
      space::SpaceMapping narrowing,
      space::MapStudySpace(TestSearchSpace(), narrowed));
  for (const Case& c : cases) {
    EXPECT_THAT(CheckPartialBinding(c.algorithm, *c.model, narrowing), IsOk());
  }
}

// ---- Model kinds ----

TEST(ModelKindTest, AlgorithmsTakeTheirKinds) {
  v1::AlgorithmSpec algorithm;
  algorithm.set_kind(v1::ALGORITHM_KIND_RANDOM);
  EXPECT_FALSE(AutoBindsModel(algorithm, v1::MODEL_KIND_PORTFOLIO));
  EXPECT_THAT(CheckModelKind(algorithm, v1::MODEL_KIND_PORTFOLIO), IsOk());
  algorithm.set_kind(v1::ALGORITHM_KIND_PMF);
  EXPECT_TRUE(AutoBindsModel(algorithm, v1::MODEL_KIND_PMF));
  EXPECT_FALSE(AutoBindsModel(algorithm, v1::MODEL_KIND_DEEPPIPE));
  algorithm.set_kind(v1::ALGORITHM_KIND_MOSAIC);
  EXPECT_TRUE(AutoBindsModel(algorithm, v1::MODEL_KIND_PORTFOLIO));
  algorithm.mutable_mosaic()->set_surrogate(v1::MOSAIC_SURROGATE_DEEPPIPE);
  EXPECT_FALSE(AutoBindsModel(algorithm, v1::MODEL_KIND_PORTFOLIO));
  EXPECT_TRUE(AutoBindsModel(algorithm, v1::MODEL_KIND_DEEPPIPE));
}

}  // namespace
}  // namespace metaopt::policy
