#include "tests/testutil/synthetic_grosi.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/common/status_macros.h"
#include "core/registry/artifact.h"
#include "core/space/random.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::train::testing {

meta::MetaDataset TwoFamilyDataset(int train, int valid, int test,
                                   uint64_t seed) {
  const v1::StudySpec spec = metaopt::testing::CatalogueSpec(21);
  meta::MetaDataset data;
  data.name = "two-family";
  data.space = spec.search_space();
  data.objective = spec.objective();
  data.metafeature_names = {"f", "g", "h"};
  space::Rng rng(seed);
  for (int t = 0; t < train + valid + test; ++t) {
    meta::Task task;
    task.id = absl::StrCat("task", t);
    task.split = t < train ? "train" : t < train + valid ? "valid" : "test";
    const bool right = t % 2 == 1;
    const double center =
        (right ? 0.85 : 0.15) + 0.05 * (space::Uniform01(rng) - 0.5);
    task.metafeatures["f"] =
        (right ? 1.0 : -1.0) + 0.1 * space::StandardNormal(rng);
    task.metafeatures["g"] = space::StandardNormal(rng);
    if (t % 4 < 2) task.metafeatures["h"] = 3.0 + space::StandardNormal(rng);
    for (const v1::Configuration& c : spec.candidates()) {
      const double x = c.assignments(0).parameters().at("x").number();
      task.configurations.push_back(c);
      task.y.push_back((x - center) * (x - center));
    }
    data.tasks.push_back(std::move(task));
  }
  return data;
}

GrosiTrainOptions SmallGrosiOptions() {
  GrosiTrainOptions options;
  options.epochs = 60;
  options.meta_batch = 4;
  options.lr = 3e-3;
  options.batch_configs = 12;
  options.seed = 3;
  options.architecture.embedding = 4;
  options.architecture.feature_hidden = 8;
  // Two towers: at these widths a joint psi1 (4 units over [x; phi]) does
  // not learn the two families in 60 epochs (GrosiTrainTest covers it wider).
  options.architecture.joint_psi1 = false;
  options.architecture.tower_layers = 2;
  options.architecture.tower_width = 4;
  options.architecture.head_layers = 2;
  options.architecture.head_width = 8;
  return options;
}

namespace {

absl::StatusOr<v1::ModelArtifact> TrainTwoFamilyArtifact(
    const GrosiTrainOptions& options) {
  const meta::MetaDataset data = TwoFamilyDataset(16, 4, 0);
  std::vector<const meta::Task*> train, valid;
  for (const meta::Task& task : data.tasks) {
    (task.split == "train" ? train : valid).push_back(&task);
  }
  METAOPT_ASSIGN_OR_RETURN(GrosiTrainResult trained,
                           TrainGrosi(data, train, valid, options));
  v1::ModelArtifact artifact;
  artifact.set_format_version(registry::kCurrentFormatVersion);
  trained.best.ToArtifact(&artifact);
  *artifact.mutable_objective() = data.objective;
  *artifact.add_portfolio() = data.tasks[0].configurations[3];
  artifact.mutable_provenance()->set_data_name(data.name);
  artifact.mutable_provenance()->set_split("train");
  return artifact;
}

}  // namespace

absl::StatusOr<v1::ModelArtifact> TwoFamilyGrosiArtifact() {
  return TrainTwoFamilyArtifact(SmallGrosiOptions());
}

std::map<std::string, surrogate::RawSample> TwoFamilySamples(
    const meta::MetaDataset& data, uint64_t seed) {
  constexpr int kRows = 40;
  constexpr int kColumns = 3;
  space::Rng rng(seed);
  std::map<std::string, surrogate::RawSample> out;
  for (int t = 0; t < static_cast<int>(data.tasks.size()); ++t) {
    const bool right = t % 2 == 1;  // TwoFamilyDataset's families
    surrogate::RawSample s;
    s.x.resize(kRows, kColumns);
    s.y = Eigen::MatrixXd::Zero(kRows, 2);
    for (int i = 0; i < kRows; ++i) {
      const int label = i % 2;
      s.y(i, label) = 1.0;
      for (int j = 0; j < kColumns; ++j) {
        s.x(i, j) =
            right ? (label == 1 ? 1.0 : -1.0) + 0.3 * space::StandardNormal(rng)
                  : 1.04 * space::StandardNormal(rng);
      }
    }
    out.emplace(data.tasks[t].id, std::move(s));
  }
  return out;
}

v1::DatasetSample SampleProto(const surrogate::RawSample& raw) {
  v1::DatasetSample sample;
  for (Eigen::Index j = 0; j < raw.x.cols(); ++j) {
    sample.add_column_kinds(v1::COLUMN_KIND_NUMERIC);
  }
  for (Eigen::Index i = 0; i < raw.x.rows(); ++i) {
    for (Eigen::Index j = 0; j < raw.x.cols(); ++j) {
      sample.add_values(raw.x(i, j));
    }
    for (Eigen::Index k = 0; k < raw.y.cols(); ++k) {
      sample.add_targets(raw.y(i, k));
    }
  }
  sample.set_num_targets(static_cast<int>(raw.y.cols()));
  return sample;
}

GrosiTrainOptions SmallD2vOptions(
    std::map<std::string, surrogate::RawSample> samples) {
  GrosiTrainOptions options = SmallGrosiOptions();
  options.architecture.dataset2vec = true;
  surrogate::Dataset2VecArchitecture& d = options.architecture.d2v;
  d.f_width = 8;
  d.f_layers = 2;
  d.g_width = 8;
  d.g_layers = 1;
  d.h_width = 8;
  d.h_layers = 2;
  d.output = 4;
  options.engineered = false;
  options.d2v_rows = 16;
  options.d2v_columns = 2;
  options.samples =
      std::make_shared<const std::map<std::string, surrogate::RawSample>>(
          std::move(samples));
  return options;
}

absl::StatusOr<v1::ModelArtifact> TwoFamilyD2vArtifact() {
  return TrainTwoFamilyArtifact(
      SmallD2vOptions(TwoFamilySamples(TwoFamilyDataset(16, 4, 0))));
}

}  // namespace metaopt::train::testing
