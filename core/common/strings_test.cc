#include "core/common/strings.h"

#include <string>

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

TEST(Fnv1a64Test, PublishedValues) {
  // The FNV-1a 64 offset basis for the empty text; reference values of the
  // FNV authors' test suite for "a" and "foobar".
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(FindInvisibleCharacterTest, FindsControlFormatAndSeparatorCharacters) {
  EXPECT_EQ(FindInvisibleCharacter("plain text, caf\xC3\xA9"), std::nullopt);
  EXPECT_EQ(FindInvisibleCharacter("a\x1b"), 0x1bu);
  EXPECT_EQ(FindInvisibleCharacter("a\xC2\x85"), 0x85u);
  EXPECT_EQ(FindInvisibleCharacter("a\xE2\x80\x8B"), 0x200Bu);
  EXPECT_EQ(FindInvisibleCharacter("a\xE2\x80\xA9"), 0x2029u);
  // Bytes that are not UTF-8 are not characters.
  EXPECT_EQ(FindInvisibleCharacter("a\xFF\xC2"), std::nullopt);
}

TEST(SanitizeTextTest, ReplacesInvisibleCharactersByEscapes) {
  EXPECT_EQ(SanitizeText("as is"), "as is");
  EXPECT_EQ(SanitizeText(std::string("a\0b\x1b[31mc\nd\te", 13)),
            "a\\x00b\\x1b[31mc d e");
  EXPECT_EQ(SanitizeText("x\xE2\x80\x8By\xC2\x85z"), "x\\u200by\\u0085z");
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

}  // namespace
}  // namespace metaopt
