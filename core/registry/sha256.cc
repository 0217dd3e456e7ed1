#include "core/registry/sha256.h"

#include <openssl/evp.h>

#include <cstdlib>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "core/common/logging.h"

namespace metaopt::registry {
namespace {

// EVP calls fail only when libcrypto cannot allocate or its SHA-256 provider
// is missing: nothing a caller could handle, and a wrong digest must never
// pass for a right one.
void CheckEvp(int result, const char* call) {
  if (result == 1) return;
  LogError(std::string("libcrypto: ") + call + " failed");
  std::abort();
}

}  // namespace

void Sha256::FreeContext::operator()(evp_md_ctx_st* context) const {
  EVP_MD_CTX_free(context);
}

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  if (context_ == nullptr) CheckEvp(0, "EVP_MD_CTX_new");
  CheckEvp(EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr),
           "EVP_DigestInit_ex");
}

Sha256::~Sha256() = default;

void Sha256::Update(std::string_view data) {
  CheckEvp(EVP_DigestUpdate(context_.get(), data.data(), data.size()),
           "EVP_DigestUpdate");
}

std::array<uint8_t, Sha256::kDigestBytes> Sha256::Digest() {
  std::array<uint8_t, kDigestBytes> digest;
  unsigned int size = 0;
  CheckEvp(EVP_DigestFinal_ex(context_.get(), digest.data(), &size),
           "EVP_DigestFinal_ex");
  if (size != kDigestBytes) CheckEvp(0, "EVP_DigestFinal_ex (digest size)");
  return digest;
}

std::string Sha256::HexDigest() {
  const std::array<uint8_t, kDigestBytes> digest = Digest();
  return absl::BytesToHexString(absl::string_view(
      reinterpret_cast<const char*>(digest.data()), digest.size()));
}

std::string Sha256Hex(std::string_view data) {
  Sha256 hash;
  hash.Update(data);
  return hash.HexDigest();
}

}  // namespace metaopt::registry
