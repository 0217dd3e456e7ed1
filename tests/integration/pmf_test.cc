// PMF through the service: a study bound to a small trained PMF model over a
// synthetic catalogue, with and without dataset meta-features.
#include <set>
#include <string>

#include "tests/testutil/synthetic_pmf.h"
#include "core/registry/artifact.h"
#include "core/space/search_space.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"

namespace metaopt::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class PmfServiceTest : public ::testing::Test {
 protected:
  PmfServiceTest()
      : data_(train::testing::SyntheticPmfDataset()),
        server_([this] {
          server::ServerOptions options;
          options.db_path = dir_.File("metaopt.db");
          options.models_dir = dir_.File("models");
          options.models_poll_interval = absl::ZeroDuration();
          return options;
        }()) {}

  void PublishModel() {
    auto artifact = train::testing::TrainSyntheticPmfArtifact();
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    catalogue_size_ = artifact->catalogue_size();
    auto version = registry::WriteModelVersion(dir_.File("models"),
                                               "synthetic-pmf", *artifact);
    ASSERT_TRUE(version.ok()) << version.status();
    ASSERT_TRUE(server_.server().models().PollOnce().ok());
  }

  v1::CreateStudyRequest Request(const std::string& id,
                                 const meta::Task* features_of) const {
    v1::CreateStudyRequest request;
    request.set_study_id(id);
    v1::StudySpec* spec = request.mutable_spec();
    *spec->mutable_search_space() = data_.space;
    *spec->mutable_objective() = data_.objective;
    spec->mutable_algorithm()->set_kind(v1::ALGORITHM_KIND_PMF);
    if (features_of != nullptr) {
      for (const auto& [name, value] : features_of->metafeatures) {
        (*spec->mutable_dataset_features())[name] = value;
      }
    }
    return request;
  }

  grpc::Status Create(const v1::CreateStudyRequest& request,
                      v1::CreateStudyResponse* response) {
    return server_.stub().CreateStudy(ContextWithDeadline().get(), request,
                                      response);
  }

  const meta::Task& TestTask(int i) const {
    return *(*data_.TasksOfSplit("test"))[i];
  }

  double ValueOn(const meta::Task& task, const v1::Configuration& config) {
    const std::string key = space::ConfigurationKey(config);
    for (size_t i = 0; i < task.configurations.size(); ++i) {
      if (space::ConfigurationKey(task.configurations[i]) == key) {
        return task.y[i];
      }
    }
    ADD_FAILURE() << "suggested a configuration outside the catalogue: "
                  << config.ShortDebugString();
    return 0;
  }

  // Suggest (count at a time) and observe on `task` for `rounds` rounds;
  // returns the trials in order.
  std::vector<v1::Trial> Drive(const std::string& id, const meta::Task& task,
                               int rounds, int count) {
    std::vector<v1::Trial> trials;
    for (int r = 0; r < rounds; ++r) {
      v1::SuggestRequest suggest;
      suggest.set_study_id(id);
      suggest.set_count(count);
      v1::SuggestResponse suggested;
      grpc::Status status = server_.stub().Suggest(ContextWithDeadline().get(),
                                                   suggest, &suggested);
      EXPECT_TRUE(status.ok()) << status.error_message();
      if (!status.ok() || suggested.trials_size() == 0) break;
      for (const v1::Trial& trial : suggested.trials()) {
        v1::ObserveRequest observe;
        observe.set_study_id(id);
        observe.set_trial_id(trial.id());
        observe.set_value(ValueOn(task, trial.configuration()));
        v1::ObserveResponse observed;
        status = server_.stub().Observe(ContextWithDeadline().get(), observe,
                                        &observed);
        EXPECT_TRUE(status.ok()) << status.error_message();
        trials.push_back(observed.trial());
      }
    }
    return trials;
  }

  ScopedTempDir dir_;
  meta::MetaDataset data_;
  TestServer server_;
  int catalogue_size_ = 0;
};

TEST_F(PmfServiceTest, WithoutAModelCreateStudyIsFailedPrecondition) {
  v1::CreateStudyResponse created;
  grpc::Status status = Create(Request("no-model", nullptr), &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(),
              HasSubstr("PMF needs a registry model over this space"));
}

TEST_F(PmfServiceTest, SuggestsFromTheModelCatalogueWithMetaFeatures) {
  PublishModel();
  const meta::Task& task = TestTask(0);
  v1::CreateStudyResponse created;
  grpc::Status status = Create(Request("pmf", &task), &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(created.study().bound_model(), "synthetic-pmf@1");

  const std::vector<v1::Trial> trials = Drive("pmf", task, 6, 2);
  ASSERT_EQ(trials.size(), 12u);
  std::set<std::string> keys;
  for (size_t i = 0; i < trials.size(); ++i) {
    EXPECT_TRUE(keys.insert(space::ConfigurationKey(trials[i].configuration()))
                    .second);
    EXPECT_EQ(trials[i].state(), v1::TRIAL_STATE_COMPLETED);
    const std::string& source = trials[i].metadata().at("policy");
    if (i < 5) {
      EXPECT_THAT(source, StartsWith("pmf/warm-start-l1"));
    } else {
      EXPECT_THAT(source, HasSubstr("ei"));
    }
  }

  v1::FineTuneRequest fine_tune;
  fine_tune.set_study_id("pmf");
  v1::FineTuneResponse tuned;
  status = server_.stub().FineTune(ContextWithDeadline().get(), fine_tune,
                                   &tuned);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_LT(tuned.loss_after(), tuned.loss_before());

  // The fine-tuned state survives a restart; the study continues.
  server_.Restart();
  const std::vector<v1::Trial> more = Drive("pmf", task, 2, 1);
  ASSERT_EQ(more.size(), 2u);
  for (const v1::Trial& trial : more) {
    EXPECT_TRUE(
        keys.insert(space::ConfigurationKey(trial.configuration())).second);
    EXPECT_EQ(trial.metadata().at("policy"), "pmf/ei");
  }
}

TEST_F(PmfServiceTest, WithoutMetaFeaturesStartsFromThePortfolio) {
  PublishModel();
  v1::CreateStudyResponse created;
  ASSERT_TRUE(Create(Request("plain", nullptr), &created).ok());
  const std::vector<v1::Trial> trials = Drive("plain", TestTask(1), 1, 3);
  ASSERT_EQ(trials.size(), 3u);
  EXPECT_EQ(trials[0].metadata().at("policy"), "pmf/portfolio");
}

TEST_F(PmfServiceTest, CandidatesMustComeFromTheCatalogue) {
  PublishModel();
  const meta::Task& task = TestTask(1);
  v1::CreateStudyRequest request = Request("subset", &task);
  for (int i : {4, 9, 14}) {
    *request.mutable_spec()->add_candidates() = task.configurations[i];
  }
  v1::CreateStudyResponse created;
  ASSERT_TRUE(Create(request, &created).ok());
  // The three candidates, then the catalogue is exhausted.
  const std::vector<v1::Trial> trials = Drive("subset", task, 3, 2);
  EXPECT_EQ(trials.size(), 3u);

  v1::Configuration outside = task.configurations[0];
  (*outside.mutable_assignments(0)->mutable_parameters())["x"].set_number(
      0.123456);
  *request.mutable_spec()->add_candidates() = outside;
  request.set_study_id("outside");
  grpc::Status status = Create(request, &created);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("spec.candidates[3]: {assignments"));
  EXPECT_THAT(status.error_message(),
              HasSubstr("not in the catalogue of model synthetic-pmf@1"));
}

}  // namespace
}  // namespace metaopt::testing
