// The JSON examples in docs/examples/ parse as the messages the docs say they
// are.

#include <google/protobuf/util/json_util.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "metaopt/v1/optimizer_service.pb.h"

namespace metaopt {
namespace {

std::string ReadExample(const std::string& name) {
  const char* root = std::getenv("METAOPT_SOURCE_DIR");
  const std::string path =
      std::string(root != nullptr ? root : ".") + "/docs/examples/" + name;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(DocsExamplesTest, StudySpecParses) {
  v1::StudySpec spec;
  const auto status = google::protobuf::util::JsonStringToMessage(
      ReadExample("study_spec.json"), &spec);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(spec.search_space().stages_size(), 2);
  EXPECT_EQ(spec.search_space().stages(0).name(), "scaler");
  EXPECT_EQ(spec.search_space().stages(0).algorithms_size(), 2);
  const v1::Stage& estimator = spec.search_space().stages(1);
  EXPECT_EQ(estimator.name(), "estimator");
  ASSERT_EQ(estimator.algorithms_size(), 2);
  ASSERT_EQ(estimator.algorithms(0).parameters_size(), 2);
  EXPECT_TRUE(estimator.algorithms(0).parameters(0).float_domain().log());
  EXPECT_EQ(estimator.algorithms(1).parameters(0).int_domain().high(), 50);
  EXPECT_EQ(spec.objective().goal(), v1::GOAL_MAXIMIZE);
  EXPECT_EQ(spec.algorithm().kind(), v1::ALGORITHM_KIND_RANDOM);
  EXPECT_EQ(spec.seed(), 7u);
}

TEST(DocsExamplesTest, ConfigurationParses) {
  v1::Configuration configuration;
  const auto status = google::protobuf::util::JsonStringToMessage(
      ReadExample("configuration.json"), &configuration);
  ASSERT_TRUE(status.ok()) << status.ToString();
  ASSERT_EQ(configuration.assignments_size(), 2);
  EXPECT_EQ(configuration.assignments(1).parameters().at("kernel").category(),
            "rbf");
}

}  // namespace
}  // namespace metaopt
