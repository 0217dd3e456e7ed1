#include "core/common/strings.h"

#include <string>

#include "core/common/goal.h"
#include "gtest/gtest.h"

namespace metaopt {
namespace {

TEST(QuoteTest, EscapesAndCutsLongValues) {
  EXPECT_EQ(Quote("abc"), "\"abc\"");
  EXPECT_EQ(Quote("say \"hi\"\n"), "\"say \\\"hi\\\"\\n\"");
  const std::string longest(kMaxQuotedBytes, 'x');
  EXPECT_EQ(Quote(longest), "\"" + longest + "\"");
  EXPECT_EQ(Quote(longest + "yz"), "\"" + longest + "...\"");
}

TEST(ShellQuoteTest, QuotesOnlyWhatTheShellWouldSplit) {
  EXPECT_EQ(ShellQuote("--data=../shared/data,x@1%+:"), "--data=../shared/data,x@1%+:");
  EXPECT_EQ(ShellQuote(""), "''");
  EXPECT_EQ(ShellQuote("a b"), "'a b'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(AnnotateTest, PrefixesTheMessageAndKeepsTheCode) {
  EXPECT_EQ(Annotate(absl::NotFoundError("gone"), "reading x"),
            absl::NotFoundError("reading x: gone"));
  EXPECT_TRUE(Annotate(absl::OkStatus(), "reading x").ok());
}

TEST(BetterTest, FollowsTheGoal) {
  EXPECT_TRUE(Better(1, 2, v1::GOAL_MINIMIZE));
  EXPECT_FALSE(Better(2, 1, v1::GOAL_MINIMIZE));
  EXPECT_TRUE(Better(2, 1, v1::GOAL_MAXIMIZE));
  EXPECT_FALSE(Better(1, 1, v1::GOAL_MAXIMIZE));
}

}  // namespace
}  // namespace metaopt
