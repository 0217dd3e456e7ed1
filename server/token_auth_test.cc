#include "server/token_auth.h"

#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"

namespace metaopt::server {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::ScopedTempDir;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kAliceToken[] = "alice-0123456789abcdef";
constexpr char kBobToken[] = "bob+/0123456789ABCDEF==";

std::unique_ptr<TokenAuthenticator> MustParse(const std::string& text) {
  auto auth = TokenAuthenticator::Parse(text, "tokens.txt");
  EXPECT_THAT(auth, IsOk());
  return auth.ok() ? *std::move(auth) : nullptr;
}

absl::Status ParseError(const std::string& text) {
  return TokenAuthenticator::Parse(text, "tokens.txt").status();
}

TEST(TokenAuthenticatorTest, ParsesOwnersTokensCommentsAndBlankLines) {
  auto auth = MustParse(absl::StrCat(
      "# team tokens\n\n  alice:", kAliceToken, "  # rotated 2026-01\r\n",
      "bob:", kBobToken, "\n", "alice:alice-second-token-000000\n", "   \n"));
  ASSERT_NE(auth, nullptr);
  EXPECT_EQ(auth->size(), 3u);
  EXPECT_EQ(auth->Authenticate(absl::StrCat("Bearer ", kAliceToken)).value(),
            "alice");
  EXPECT_EQ(auth->Authenticate(absl::StrCat("Bearer ", kBobToken)).value(),
            "bob");
  EXPECT_EQ(auth->Authenticate("Bearer alice-second-token-000000").value(),
            "alice");
  // The scheme is case-insensitive (RFC 7235).
  EXPECT_EQ(auth->Authenticate(absl::StrCat("bearer ", kBobToken)).value(),
            "bob");
}

TEST(TokenAuthenticatorTest, RejectsMissingMalformedAndUnknownTokens) {
  auto auth = MustParse(absl::StrCat("alice:", kAliceToken, "\n"));
  ASSERT_NE(auth, nullptr);
  const auto unauthenticated = [](const char* why) {
    return StatusIs(absl::StatusCode::kUnauthenticated,
                    AllOf(HasSubstr(why), HasSubstr("Bearer <token>")));
  };
  EXPECT_THAT(auth->Authenticate(std::nullopt), unauthenticated("missing"));
  EXPECT_THAT(auth->Authenticate(""), unauthenticated("not 'Bearer"));
  EXPECT_THAT(auth->Authenticate(kAliceToken), unauthenticated("not 'Bearer"));
  EXPECT_THAT(auth->Authenticate(absl::StrCat("Basic ", kAliceToken)),
              unauthenticated("not 'Bearer"));
  EXPECT_THAT(auth->Authenticate("Bearer "), unauthenticated("not 'Bearer"));
  EXPECT_THAT(auth->Authenticate("Bearer wrong-token-0123456789"),
              unauthenticated("invalid token"));
  // A prefix, an extension or a one-character change of a real token.
  std::string token = kAliceToken;
  EXPECT_THAT(auth->Authenticate("Bearer " + token.substr(0, 10)),
              unauthenticated("invalid token"));
  EXPECT_THAT(auth->Authenticate("Bearer " + token + "x"),
              unauthenticated("invalid token"));
  token.back() = 'e';
  EXPECT_THAT(auth->Authenticate("Bearer " + token),
              unauthenticated("invalid token"));
  // Error messages never echo the token.
  EXPECT_THAT(auth->Authenticate("Bearer " + token).status().message(),
              Not(HasSubstr(token)));
}

TEST(TokenAuthenticatorTest, ParseErrorsNameFileAndLine) {
  const std::string good = absl::StrCat("alice:", kAliceToken, "\n");
  EXPECT_THAT(ParseError(good + "bob\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tokens.txt:2: expected 'owner:token'")));
  EXPECT_THAT(ParseError(good + "# c\n:" + kBobToken + "\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokens.txt:3:"), HasSubstr("owner"))));
  EXPECT_THAT(ParseError(absl::StrCat("-bob:", kBobToken)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokens.txt:1:"),
                             HasSubstr("starting with a letter or digit"))));
  EXPECT_THAT(
      ParseError(absl::StrCat("b o b:", kBobToken)),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokens.txt:1:")));
  EXPECT_THAT(ParseError(absl::StrCat(std::string(65, 'o'), ":", kBobToken)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("1..64 characters")));
  EXPECT_THAT(ParseError("bob:short"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokens.txt:1:"), HasSubstr("bob"),
                             HasSubstr("has 5 characters; 16..512"))));
  EXPECT_THAT(
      ParseError("bob:" + std::string(513, 'x')),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("16..512")));
  EXPECT_THAT(
      ParseError("bob:0123456789abcdef ghij"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("tokens.txt:1:"), HasSubstr("RFC 6750"))));
  EXPECT_THAT(
      ParseError("bob:0123456789=abcdef"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("RFC 6750")));
  EXPECT_THAT(
      ParseError("bob:0123456789abcdef:x"),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("RFC 6750")));
}

TEST(TokenAuthenticatorTest, DuplicateTokensAreRejectedWithoutEchoingThem) {
  const absl::Status twice_for_two_owners = ParseError(
      absl::StrCat("alice:", kAliceToken, "\n\nbob:", kAliceToken, "\n"));
  EXPECT_THAT(twice_for_two_owners,
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("tokens.txt:3:"), HasSubstr("line 1"),
                             HasSubstr("unique"))));
  EXPECT_THAT(twice_for_two_owners.message(), Not(HasSubstr(kAliceToken)));
  EXPECT_THAT(
      ParseError(
          absl::StrCat("alice:", kAliceToken, "\nalice:", kAliceToken, "\n")),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tokens.txt:2:")));
}

TEST(TokenAuthenticatorTest, FileWithoutTokensIsAnError) {
  EXPECT_THAT(ParseError(""), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("tokens.txt: no 'owner")));
  EXPECT_THAT(ParseError("# nobody yet\n\n"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no 'owner:token' lines")));
}

TEST(TokenAuthenticatorTest, FromFileReadsTheFileAndNamesItInErrors) {
  ScopedTempDir dir;
  const std::string path = dir.File("tokens");
  std::ofstream(path) << "alice:" << kAliceToken << "\nbroken line\n";
  EXPECT_THAT(
      TokenAuthenticator::FromFile(path).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(path + ":2:")));
  std::ofstream(path, std::ios::trunc) << "alice:" << kAliceToken << "\n";
  auto auth = TokenAuthenticator::FromFile(path);
  ASSERT_THAT(auth, IsOk());
  EXPECT_EQ((*auth)->size(), 1u);
  EXPECT_THAT(TokenAuthenticator::FromFile(dir.File("absent")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent")));
}

TEST(ValidateOwnerTest, AcceptsIdsLikeStudyIds) {
  EXPECT_THAT(ValidateOwner("team-a.ml_2"), IsOk());
  EXPECT_THAT(ValidateOwner(""),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1..64")));
  EXPECT_THAT(ValidateOwner("_x"), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("letter or digit")));
  EXPECT_THAT(ValidateOwner("a/b"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("a/b")));
}

}  // namespace
}  // namespace metaopt::server
