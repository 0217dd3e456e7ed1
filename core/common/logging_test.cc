#include "core/common/logging.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace metaopt {
namespace {

using ::testing::MatchesRegex;

// Restores the process-wide log settings after each test.
class LoggingTest : public ::testing::Test {
 protected:
  void TearDown() override {
    SetMinLogSeverity(LogSeverity::kInfo);
    SetLogFormat(LogFormat::kText);
  }

  static std::string Capture(LogSeverity severity, std::string_view message,
                             const std::vector<LogField>& fields) {
    ::testing::internal::CaptureStderr();
    Log(severity, message, fields);
    return ::testing::internal::GetCapturedStderr();
  }
};

TEST_F(LoggingTest, TextLineWithFields) {
  const std::string line = Capture(LogSeverity::kWarning, "rpc",
                                   {{"method", std::string("Suggest")},
                                    {"study_id", std::string("svm-knn")},
                                    {"trial_ids", std::vector<int64_t>{3, 4}},
                                    {"code", std::string("NOT_FOUND")},
                                    {"latency_ms", 1.25},
                                    {"count", int64_t{2}}});
  EXPECT_THAT(line, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z WARNING "
                                 "rpc method=Suggest study_id=svm-knn "
                                 "trial_ids=3,4 code=NOT_FOUND "
                                 "latency_ms=1.25 count=2\n"));
}

TEST_F(LoggingTest, TextQuotesValuesThatWouldBreakTheLine) {
  const std::string line =
      Capture(LogSeverity::kInfo, "m",
              {{"error", std::string("study \"x\" does not exist\nnext")},
               {"empty", std::string()},
               {"eq", std::string("a=b")}});
  EXPECT_THAT(line,
              ::testing::EndsWith(
                  " INFO m error=\"study \\\"x\\\" does not exist\\nnext\""
                  " empty=\"\" eq=\"a=b\"\n"));
}

TEST_F(LoggingTest, JsonLineHasEveryFieldAsAMember) {
  SetLogFormat(LogFormat::kJson);
  const std::string line =
      Capture(LogSeverity::kError, "rpc \"failed\"",
              {{"study_id", std::string("a\tb\x01")},
               {"trial_ids", std::vector<int64_t>{7}},
               {"latency_ms", 0.5},
               {"bad", std::numeric_limits<double>::infinity()},
               {"n", int64_t{-3}}});
  ASSERT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  const nlohmann::json json = nlohmann::json::parse(line);
  EXPECT_EQ(json["level"], "ERROR");
  EXPECT_EQ(json["msg"], "rpc \"failed\"");
  EXPECT_EQ(json["study_id"], "a\tb\x01");
  EXPECT_EQ(json["trial_ids"], nlohmann::json::array({7}));
  EXPECT_EQ(json["latency_ms"], 0.5);
  EXPECT_TRUE(json["bad"].is_null());
  EXPECT_EQ(json["n"], -3);
  EXPECT_TRUE(json["time"].is_string());
}

TEST_F(LoggingTest, JsonLineStaysValidForBytesThatAreNotUtf8) {
  SetLogFormat(LogFormat::kJson);
  // A lone continuation byte, a truncated two-byte sequence and 0xff, beside
  // valid UTF-8 ("é", "→").
  const std::string line =
      Capture(LogSeverity::kWarning, "caf\xc3\xa9 \x80",
              {{"study_id", std::string("a\xc3")},
               {std::string("k\xff"), std::string("\xe2\x86\x92 ok")}});
  ASSERT_FALSE(line.empty());
  nlohmann::json json;
  ASSERT_NO_THROW(json = nlohmann::json::parse(line)) << line;
  EXPECT_EQ(json["msg"], "caf\xc3\xa9 \xef\xbf\xbd");
  EXPECT_EQ(json["study_id"], "a\xef\xbf\xbd");
  EXPECT_EQ(json["k\xef\xbf\xbd"], "\xe2\x86\x92 ok");
}

TEST_F(LoggingTest, MessagesBelowTheMinimumSeverityAreDropped) {
  EXPECT_EQ(Capture(LogSeverity::kDebug, "hidden", {}), "");
  SetMinLogSeverity(LogSeverity::kDebug);
  EXPECT_THAT(Capture(LogSeverity::kDebug, "shown", {}),
              ::testing::HasSubstr(" DEBUG shown\n"));
  SetMinLogSeverity(LogSeverity::kError);
  EXPECT_EQ(Capture(LogSeverity::kWarning, "hidden", {}), "");
}

}  // namespace
}  // namespace metaopt
