// SHA-256 (FIPS 180-4) from OpenSSL's libcrypto (the EVP digest interface),
// used to check model artifacts against their MANIFEST.
#ifndef METAOPT_CORE_REGISTRY_SHA256_H_
#define METAOPT_CORE_REGISTRY_SHA256_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st;

namespace metaopt::registry {

// Incremental SHA-256. Not thread-safe (one owner).
//   Sha256 hash;
//   hash.Update("ab");
//   hash.Update("c");
//   std::string hex = hash.HexDigest();  // "ba7816bf..."
class Sha256 {
 public:
  static constexpr int kDigestBytes = 32;

  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Appends `data` to the message. Must not be called after Digest() /
  // HexDigest().
  void Update(std::string_view data);

  // Finishes the hash and returns the digest. Call at most once.
  std::array<uint8_t, kDigestBytes> Digest();
  // As Digest(), in lower-case hex (64 characters).
  std::string HexDigest();

 private:
  struct FreeContext {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, FreeContext> context_;
};

// The lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_SHA256_H_
