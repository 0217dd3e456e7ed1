// SHA-256 (FIPS 180-4), used to check model artifacts against their MANIFEST.
#ifndef METAOPT_CORE_REGISTRY_SHA256_H_
#define METAOPT_CORE_REGISTRY_SHA256_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

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

  // Appends `data` to the message. Must not be called after Digest() /
  // HexDigest().
  void Update(std::string_view data);

  // Finishes the hash and returns the digest. Call at most once.
  std::array<uint8_t, kDigestBytes> Digest();
  // As Digest(), in lower-case hex (64 characters).
  std::string HexDigest();

 private:
  void ProcessBlock(const uint8_t* block);

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> buffer_;
  size_t buffered_ = 0;       // bytes in buffer_
  uint64_t total_bytes_ = 0;  // message length so far
};

// The lower-case hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace metaopt::registry

#endif  // METAOPT_CORE_REGISTRY_SHA256_H_
