#include "core/registry/sha256.h"

#include <string>

#include "gtest/gtest.h"

namespace metaopt::registry {
namespace {

// FIPS 180-2 appendix B / NIST CAVP vectors.
TEST(Sha256Test, EmptyString) {
  EXPECT_EQ(Sha256Hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(Sha256Test, Abc) {
  EXPECT_EQ(Sha256Hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, TwoBlockMessage) {
  EXPECT_EQ(
      Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256Test, OneMillionAs) {
  EXPECT_EQ(Sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256Test, IncrementalUpdatesMatchOneShot) {
  const std::string message(1000, 'x');
  // Chunk sizes that straddle the 64-byte block and the 56-byte padding
  // boundary.
  for (size_t chunk : {1, 7, 55, 56, 63, 64, 65, 200}) {
    Sha256 hash;
    for (size_t i = 0; i < message.size(); i += chunk) {
      hash.Update(std::string_view(message).substr(i, chunk));
    }
    EXPECT_EQ(hash.HexDigest(), Sha256Hex(message)) << "chunk " << chunk;
  }
}

TEST(Sha256Test, PaddingBoundaryLengths) {
  // 55 bytes fit the length in the same block; 56 need an extra block.
  EXPECT_EQ(Sha256Hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(Sha256Hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
}

}  // namespace
}  // namespace metaopt::registry
