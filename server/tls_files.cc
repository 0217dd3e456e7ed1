#include "server/tls_files.h"

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <ctime>
#include <memory>

#include "absl/strings/str_cat.h"

namespace metaopt::server {
namespace {

struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemoryBio(const std::string& text) {
  return BioPtr(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
}

// The reason of OpenSSL's last error (and clears the error queue).
std::string OpenSslReason() {
  const unsigned long code = ERR_peek_last_error();
  ERR_clear_error();
  if (code == 0) return "no PEM data found";
  const char* reason = ERR_reason_error_string(code);
  return reason != nullptr ? reason : "unknown OpenSSL error";
}

absl::Time ToTime(const ASN1_TIME* t) {
  std::tm tm = {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromUnixSeconds(timegm(&tm));
}

std::string Subject(X509* cert) {
  BioPtr out(BIO_new(BIO_s_mem()));
  X509_NAME_print_ex(out.get(), X509_get_subject_name(cert), 0,
                     XN_FLAG_ONELINE);
  char* data = nullptr;
  const long size = BIO_get_mem_data(out.get(), &data);
  return std::string(data, static_cast<size_t>(size));
}

absl::Status Invalid(const char* flag, const std::string& file,
                     const std::string& reason) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, " ", file, ": ", reason));
}

}  // namespace

absl::StatusOr<CertificateInfo> CheckServerCertificate(
    const std::string& cert_pem, const std::string& cert_file,
    const std::string& key_pem, const std::string& key_file, absl::Time now) {
  ERR_clear_error();
  BioPtr cert_bio = MemoryBio(cert_pem);
  X509Ptr cert(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  if (cert == nullptr) {
    return Invalid(
        "--tls-cert", cert_file,
        absl::StrCat("not a PEM certificate (", OpenSslReason(), ")"));
  }
  BioPtr key_bio = MemoryBio(key_pem);
  PkeyPtr key(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  if (key == nullptr) {
    return Invalid("--tls-key", key_file,
                   absl::StrCat("not a PEM private key without passphrase (",
                                OpenSslReason(), ")"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return Invalid("--tls-key", key_file,
                   absl::StrCat("is not the private key of the certificate "
                                "in --tls-cert ",
                                cert_file));
  }
  CertificateInfo info;
  info.subject = Subject(cert.get());
  info.not_before = ToTime(X509_get0_notBefore(cert.get()));
  info.not_after = ToTime(X509_get0_notAfter(cert.get()));
  if (info.not_after <= now) {
    return Invalid(
        "--tls-cert", cert_file,
        absl::StrCat("the certificate (", info.subject, ") expired at ",
                     absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", info.not_after,
                                      absl::UTCTimeZone()),
                     "; clients would refuse it"));
  }
  return info;
}

absl::Status CheckCaCertificates(const std::string& pem,
                                 const std::string& file) {
  ERR_clear_error();
  BioPtr bio = MemoryBio(pem);
  int count = 0;
  while (true) {
    X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (cert == nullptr) break;
    ++count;
  }
  // The loop ends at the end of the data (PEM_R_NO_START_LINE) or at a block
  // that does not parse.
  const unsigned long error = ERR_peek_last_error();
  const bool end_of_data = ERR_GET_LIB(error) == ERR_LIB_PEM &&
                           ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
  if (error != 0 && !end_of_data) {
    return Invalid("--tls-client-ca", file,
                   absl::StrCat("certificate ", count + 1, " does not parse (",
                                OpenSslReason(), ")"));
  }
  ERR_clear_error();
  if (count == 0) {
    return Invalid("--tls-client-ca", file, "holds no PEM certificate");
  }
  return absl::OkStatus();
}

}  // namespace metaopt::server
