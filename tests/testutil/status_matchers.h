// GoogleTest matchers for absl::Status / absl::StatusOr (abseil 20220623 ships
// none).
//   EXPECT_THAT(s, IsOk());
//   EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument,
//   HasSubstr("low")));
#ifndef METAOPT_TESTS_TESTUTIL_STATUS_MATCHERS_H_
#define METAOPT_TESTS_TESTUTIL_STATUS_MATCHERS_H_

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace metaopt::testing {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = ::metaopt::testing::GetStatus(arg);
  if (!s.ok()) *result_listener << "status: " << s;
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher,
           "has code " + absl::StatusCodeToString(code)) {
  const absl::Status& s = ::metaopt::testing::GetStatus(arg);
  *result_listener << "status: " << s;
  return s.code() == code &&
         ::testing::Matches(message_matcher)(std::string(s.message()));
}

}  // namespace metaopt::testing

#define METAOPT_ASSERT_OK(expr) ASSERT_THAT((expr), ::metaopt::testing::IsOk())
#define METAOPT_EXPECT_OK(expr) EXPECT_THAT((expr), ::metaopt::testing::IsOk())

// Asserts that `rexpr` (a StatusOr) is OK and moves its value into `lhs`.
#define METAOPT_ASSERT_OK_AND_ASSIGN(lhs, rexpr) \
  METAOPT_ASSERT_OK_AND_ASSIGN_IMPL_(            \
      METAOPT_TEST_CONCAT_(metaopt_test_statusor_, __LINE__), lhs, rexpr)
#define METAOPT_TEST_CONCAT_INNER_(a, b) a##b
#define METAOPT_TEST_CONCAT_(a, b) METAOPT_TEST_CONCAT_INNER_(a, b)
#define METAOPT_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, rexpr) \
  auto statusor = (rexpr);                                       \
  ASSERT_THAT(statusor.status(), ::metaopt::testing::IsOk());    \
  lhs = std::move(statusor).value()

#endif  // METAOPT_TESTS_TESTUTIL_STATUS_MATCHERS_H_
