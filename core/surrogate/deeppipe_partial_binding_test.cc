// DeepPipe partial binding: a model serving a study that masks, narrows or
// adds algorithms, and the new-encoder fine-tuning objective (finite
// differences; equal to Loss bit for bit).
#include <cmath>
#include <functional>
#include <tuple>
#include <vector>

#include "Eigen/Core"
#include "core/space/random.h"
#include "core/surrogate/deeppipe_model.h"
#include "tests/testutil/deeppipe_fixtures.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::surrogate {
namespace {

using deeppipe_testing::Data;
using deeppipe_testing::Sample;
using deeppipe_testing::SmallArchitecture;
using deeppipe_testing::TestSpace;
using deeppipe_testing::TwoFeatures;
using ::metaopt::testing::StatusIs;
using ::testing::HasSubstr;

// The test space plus an "SVM" estimator with one float parameter; without
// "none" in the preprocessor (masked) and with a narrower n_estimators.
v1::SearchSpace StudySpaceWithNewAlgorithm() {
  v1::SearchSpace study = TestSpace();
  study.mutable_stages(0)->mutable_algorithms()->DeleteSubrange(0, 1);
  study.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(200);
  v1::Algorithm* svm = study.mutable_stages(1)->add_algorithms();
  svm->set_name("SVM");
  for (const char* name : {"C", "gamma"}) {
    v1::Parameter* p = svm->add_parameters();
    p->set_name(name);
    p->mutable_float_domain()->set_low(0.1);
    p->mutable_float_domain()->set_high(10);
    p->mutable_float_domain()->set_log(true);
  }
  return study;
}

// A trained-looking model with one encoder layer (perturbed parameters).
DeepPipeModel MetaModelWithEncoders() {
  DeepPipeModel model =
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(1), 3).value();
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(23);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  EXPECT_TRUE(model.set_parameters(params).ok());
  return model;
}

// The number of parameters of each block's encoder (one layer, width F * L_s
// with F = 2 from SmallArchitecture; the SVM block is narrower than the
// stage's widest, so the extension keeps L_s).
std::vector<int> EncoderSizes(const DeepPipeModel& model) {
  const space::EncodingLayout& layout = model.encoder().layout();
  std::vector<int> widest(layout.stages.size(), 1);
  for (const space::BlockLayout& block : layout.blocks) {
    widest[block.stage] = std::max(widest[block.stage], block.size);
  }
  std::vector<int> sizes;
  for (const space::BlockLayout& block : layout.blocks) {
    sizes.push_back((std::max(1, block.size) + 1) * 2 * widest[block.stage]);
  }
  return sizes;
}

TEST(DeepPipePartialBindingTest,
     KnownAlgorithmsKeepTheirEncodersNewOnesAreSeeded) {
  const DeepPipeModel meta = MetaModelWithEncoders();
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel extended,
      meta.ForStudySpace(StudySpaceWithNewAlgorithm(), /*seed=*/5));
  EXPECT_EQ(extended.num_new_encoders(), 1);
  EXPECT_EQ(meta.num_new_encoders(), 0);
  // The extended space is the model's (ranges included) plus SVM.
  ASSERT_EQ(extended.search_space().stages(1).algorithms_size(), 3);
  EXPECT_EQ(extended.search_space().stages(1).algorithms(2).name(), "SVM");
  EXPECT_EQ(extended.search_space().stages(0).algorithms_size(), 2);
  EXPECT_EQ(extended.search_space()
                .stages(1)
                .algorithms(0)
                .parameters(0)
                .int_domain()
                .high(),
            500);
  // Configurations of known algorithms embed exactly as in the model.
  const Data known = Sample(meta, 20, 8);
  std::vector<v1::Configuration> configs;
  for (int i = 0; i < known.X.rows(); ++i) {
    configs.push_back(meta.encoder().Decode(known.X.row(i).transpose()));
  }
  METAOPT_ASSERT_OK_AND_ASSIGN(Eigen::MatrixXd z_meta, meta.Embed(known.X));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      Eigen::MatrixXd z_extended,
      extended.Embed(extended.encoder().EncodeBatch(configs)));
  EXPECT_LT((z_meta - z_extended).norm(), 1e-12);
  // The kernel is the model's.
  const int kp = meta.num_kernel_parameters();
  EXPECT_EQ(extended.parameters().tail(kp), meta.parameters().tail(kp));
  // The new encoder depends on the seed only.
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel again, meta.ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel other, meta.ForStudySpace(StudySpaceWithNewAlgorithm(), 6));
  EXPECT_EQ(again.parameters(), extended.parameters());
  EXPECT_NE(other.parameters(), extended.parameters());
  // Without new algorithms the model is unchanged.
  v1::SearchSpace narrowed = TestSpace();
  narrowed.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_low(20);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel same,
                               meta.ForStudySpace(narrowed, 5));
  EXPECT_EQ(same.num_new_encoders(), 0);
  EXPECT_EQ(same.parameters(), meta.parameters());
}

TEST(DeepPipePartialBindingTest, RefusesWhatItCannotServe) {
  // No encoder layers: nothing to give a new algorithm.
  DeepPipeModel flat =
      DeepPipeModel::Create(TestSpace(), SmallArchitecture(0), 3).value();
  EXPECT_THAT(flat.ForStudySpace(StudySpaceWithNewAlgorithm(), 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("estimator/SVM")));
  v1::SearchSpace wider = TestSpace();
  wider.mutable_stages(1)
      ->mutable_algorithms(0)
      ->mutable_parameters(0)
      ->mutable_int_domain()
      ->set_high(900);
  EXPECT_THAT(MetaModelWithEncoders().ForStudySpace(wider, 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not within the model's")));
}

// Rows choosing the new algorithm reach the new encoder: the loss gradient
// w.r.t. its parameters matches central differences (the meta-learned part
// is checked by DeepPipeGradientTest).
TEST(DeepPipePartialBindingTest, NewEncoderGradientMatchesFiniteDifferences) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      MetaModelWithEncoders().ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  Eigen::VectorXd params = model.parameters();
  space::Rng rng(31);
  for (int i = 0; i < model.num_network_parameters(); ++i) {
    params[i] += 0.05 * space::StandardNormal(rng);
  }
  METAOPT_ASSERT_OK(model.set_parameters(params));
  const Data data = Sample(model, 24, 13);
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss loss, model.Loss(data.X, data.y));
  // The new encoder's parameters: the third estimator block's.
  const std::vector<int> sizes = EncoderSizes(model);
  const space::EncodingLayout& layout = model.encoder().layout();
  int first_new = -1;
  int new_params = 0;
  for (size_t b = 0, offset = 0; b < layout.blocks.size();
       offset += sizes[b++]) {
    if (layout.blocks[b].stage == 1 && layout.blocks[b].algorithm == 2) {
      first_new = static_cast<int>(offset);
      new_params = sizes[b];
    }
  }
  ASSERT_GE(first_new, 0);
  ASSERT_EQ(new_params, (2 + 1) * 6);  // 2 inputs -> F * L_1 = 2 * 3
  double norm = 0.0;
  const double h = 1e-6;
  for (int i = first_new; i < first_new + new_params; ++i) {
    DeepPipeModel probe = model;
    Eigen::VectorXd p = params;
    p[i] += h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss up, probe.Loss(data.X, data.y));
    p[i] -= 2 * h;
    METAOPT_ASSERT_OK(probe.set_parameters(p));
    METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss down, probe.Loss(data.X, data.y));
    const double numeric = (up.value - down.value) / (2 * h);
    EXPECT_NEAR(loss.gradient[i], numeric, 1e-6 + 1e-4 * std::abs(numeric))
        << "parameter " << i;
    norm += loss.gradient[i] * loss.gradient[i];
  }
  EXPECT_GT(norm, 1e-12);
}

TEST(DeepPipePartialBindingTest, NewEncoderFineTuneFreezesTheMetaLearnedPart) {
  METAOPT_ASSERT_OK_AND_ASSIGN(
      DeepPipeModel model,
      MetaModelWithEncoders().ForStudySpace(StudySpaceWithNewAlgorithm(), 5));
  const Data data = Sample(model, 30, 4);
  DeepPipeFineTuneOptions options;
  options.scope = FineTuneScope::kNewEncoders;
  options.max_steps = 60;
  options.learning_rate = 0.01;
  options.patience = 0;
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeFineTuneResult tuned,
                               model.FineTune(data.X, data.y, options));
  EXPECT_EQ(tuned.steps_run, 60);
  EXPECT_LT(tuned.loss_after, tuned.loss_before);
  const Eigen::VectorXd before = model.parameters();
  const Eigen::VectorXd after = tuned.model.parameters();
  // Exactly the new encoder's parameters and the kernel's moved.
  const space::EncodingLayout& layout = model.encoder().layout();
  const std::vector<int> sizes = EncoderSizes(model);
  int offset = 0;
  int moved_new = 0;
  for (size_t b = 0; b < layout.blocks.size(); ++b) {
    const space::BlockLayout& block = layout.blocks[b];
    const int n = sizes[b];
    const bool is_new = block.stage == 1 && block.algorithm == 2;
    const bool moved = before.segment(offset, n) != after.segment(offset, n);
    EXPECT_EQ(moved, is_new)
        << "block " << block.stage << "/" << block.algorithm;
    moved_new += moved && is_new;
    offset += n;
  }
  EXPECT_EQ(moved_new, 1);
  const int net = model.num_network_parameters();
  EXPECT_EQ(before.segment(offset, net - offset),
            after.segment(offset, net - offset))
      << "aggregator";
  EXPECT_NE(before.tail(model.num_kernel_parameters()),
            after.tail(model.num_kernel_parameters()));
}

}  // namespace
}  // namespace metaopt::surrogate

namespace metaopt::surrogate {

// Reaches the new-encoder fine-tuning objective (a private detail).
class DeepPipeModelTestAccess {
 public:
  static std::vector<Eigen::Index> TrainedIndices(const DeepPipeModel& model) {
    return model.NewEncoderParameterIndices();
  }
  static std::function<absl::StatusOr<DeepPipeLoss>(const Eigen::VectorXd&)>
  NewEncoderObjective(const DeepPipeModel& model, const Eigen::MatrixXd& X,
                      const Eigen::VectorXd& y) {
    return model.NewEncoderObjective(X, y);
  }
};

namespace {

class DeepPipeNewEncoderObjectiveTest
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

// FineTuneScope::kNewEncoders' objective is the whole network's Loss with its
// gradient restricted to the trained entries, bit for bit: at the start,
// after moves of the new encoders and the kernel, back at the start (nothing
// leaks between calls), and with a new algorithm that no row chooses; for a
// small network and one wide enough for Eigen's blocked products.
TEST_P(DeepPipeNewEncoderObjectiveTest, EqualsTheWholeNetworksLossExactly) {
  const auto [conditioned, wide] = GetParam();
  DeepPipeArchitecture architecture = SmallArchitecture(1);
  if (wide) {
    architecture.width_factor = 8;
    architecture.hidden = 128;
    architecture.embedding = 20;
  }
  const int f = architecture.width_factor;
  DeepPipeModel meta =
      DeepPipeModel::Create(TestSpace(), architecture, 3,
                            conditioned ? TwoFeatures() : FeatureScaler())
          .value();
  Eigen::VectorXd meta_params = meta.parameters();
  space::Rng rng(41);
  for (int i = 0; i < meta.num_network_parameters(); ++i) {
    meta_params[i] += 0.1 * space::StandardNormal(rng);
  }
  METAOPT_ASSERT_OK(meta.set_parameters(meta_params));
  if (conditioned) METAOPT_ASSERT_OK(meta.set_task(Eigen::Vector2d(0.7, -1.2)));
  // New algorithms in both stages: SVM (two inputs) and a parameterless
  // preprocessor (the dummy column).
  v1::SearchSpace study = StudySpaceWithNewAlgorithm();
  study.mutable_stages(0)->add_algorithms()->set_name("scaler");
  METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeModel model,
                               meta.ForStudySpace(study, /*seed=*/5));
  ASSERT_EQ(model.num_new_encoders(), 2);
  const std::vector<Eigen::Index> trained =
      DeepPipeModelTestAccess::TrainedIndices(model);
  const Eigen::VectorXd all = model.parameters();
  const Eigen::VectorXd start = all(trained);
  Eigen::VectorXd moved = start;
  for (Eigen::Index i = 0; i < moved.size(); ++i) {
    moved[i] += 0.2 * space::StandardNormal(rng);
  }
  const Eigen::VectorXd further = moved + 0.3 * (moved - start);

  const Data data = Sample(model, 40, 13);
  // Three row sets: all rows; those without "scaler" (stage 0, appended as
  // algorithm 2); those without either new algorithm (SVM: stage 1,
  // algorithm 2), where no embedding moves.
  const space::EncodingLayout& layout = model.encoder().layout();
  const int scaler = layout.stages[0].offset + 2;
  const int svm = layout.stages[1].offset + 2;
  std::vector<std::vector<Eigen::Index>> row_sets(3);
  for (Eigen::Index r = 0; r < data.X.rows(); ++r) {
    row_sets[0].push_back(r);
    if (data.X(r, scaler) == 1.0) continue;
    row_sets[1].push_back(r);
    if (data.X(r, svm) != 1.0) row_sets[2].push_back(r);
  }
  ASSERT_LT(row_sets[1].size(), row_sets[0].size());
  ASSERT_LT(row_sets[2].size(), row_sets[1].size());
  ASSERT_GT(row_sets[2].size(), 1u);

  for (int set = 0; set < 3; ++set) {
    SCOPED_TRACE(::testing::Message() << "row set " << set);
    const Eigen::MatrixXd X = data.X(row_sets[set], Eigen::all);
    const Eigen::VectorXd y = data.y(row_sets[set]);
    auto objective = DeepPipeModelTestAccess::NewEncoderObjective(model, X, y);
    for (const Eigen::VectorXd& q : {start, moved, further, start}) {
      Eigen::VectorXd w = all;
      w(trained) = q;
      DeepPipeModel reference = model;
      METAOPT_ASSERT_OK(reference.set_parameters(w));
      METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss expected, reference.Loss(X, y));
      METAOPT_ASSERT_OK_AND_ASSIGN(DeepPipeLoss fast, objective(q));
      EXPECT_EQ(fast.value, expected.value);
      EXPECT_EQ(fast.loo, expected.loo);
      ASSERT_EQ(fast.gradient.size(), q.size());
      EXPECT_EQ(fast.gradient, Eigen::VectorXd(expected.gradient(trained)));
      // Trained: scaler's encoder (1 input -> F * L_0 = F), SVM's (2 inputs
      // -> F * L_1 = 3 F), the kernel; an encoder learns only from its rows.
      ASSERT_EQ(q.size(),
                (1 + 1) * f + (2 + 1) * 3 * f + model.num_kernel_parameters());
      EXPECT_EQ(fast.gradient.head(2 * f).norm() > 0.0, set == 0);
      EXPECT_EQ(fast.gradient.segment(2 * f, 9 * f).norm() > 0.0, set < 2);
      EXPECT_GT(fast.gradient.tail(model.num_kernel_parameters()).norm(), 0.0);
    }
    Eigen::VectorXd broken = start;
    broken[0] = std::nan("");
    EXPECT_THAT(
        objective(broken).status(),
        StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-finite")));
  }
}

INSTANTIATE_TEST_SUITE_P(ConditioningAndWidth, DeepPipeNewEncoderObjectiveTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

}  // namespace
}  // namespace metaopt::surrogate