#include "server/tls_files.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testutil/status_matchers.h"

namespace metaopt::server {
namespace {

using ::metaopt::testing::IsOk;
using ::metaopt::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

// A self-signed EC certificate for CN=`name`, valid from now + `from` to now +
// `until` (seconds), and its key, as PEM.
struct Pem {
  std::string cert;
  std::string key;
};

std::string ToPem(int (*write)(BIO*, void*), void* object) {
  BIO* bio = BIO_new(BIO_s_mem());
  EXPECT_EQ(write(bio, object), 1);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

Pem MakeCertificate(const char* name, long from, long until) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), from);
  X509_gmtime_adj(X509_getm_notAfter(cert), until);
  X509_set_pubkey(cert, key);
  X509_NAME* subject = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(name), -1,
                             -1, 0);
  X509_set_issuer_name(cert, subject);
  EXPECT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  Pem pem;
  pem.cert = ToPem(
      [](BIO* bio, void* x) {
        return PEM_write_bio_X509(bio, static_cast<X509*>(x));
      },
      cert);
  pem.key = ToPem(
      [](BIO* bio, void* k) {
        return PEM_write_bio_PrivateKey(bio, static_cast<EVP_PKEY*>(k), nullptr,
                                        nullptr, 0, nullptr, nullptr);
      },
      key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return pem;
}

constexpr long kDay = 24 * 3600;

TEST(TlsFilesTest, AcceptsAMatchingValidPairAndReportsItsValidity) {
  const Pem pem = MakeCertificate("metaopt.test", -kDay, 30 * kDay);
  const absl::Time now = absl::Now();
  absl::StatusOr<CertificateInfo> info = CheckServerCertificate(
      pem.cert, "server.crt", pem.key, "server.key", now);
  ASSERT_THAT(info, IsOk());
  EXPECT_THAT(info->subject, HasSubstr("CN = metaopt.test"));
  EXPECT_LT(absl::AbsDuration(info->not_after - (now + absl::Hours(24 * 30))),
            absl::Minutes(1));
  EXPECT_LT(info->not_before, now);
}

TEST(TlsFilesTest, AKeyOfAnotherCertificateNamesBothFiles) {
  const Pem a = MakeCertificate("a", -kDay, kDay);
  const Pem b = MakeCertificate("b", -kDay, kDay);
  EXPECT_THAT(
      CheckServerCertificate(a.cert, "a.crt", b.key, "b.key", absl::Now()),
      StatusIs(kInvalid, AllOf(HasSubstr("--tls-key b.key"),
                               HasSubstr("not the private key of the "
                                         "certificate in --tls-cert a.crt"))));
}

TEST(TlsFilesTest, AnExpiredCertificateIsRefusedWithItsExpiry) {
  const Pem pem = MakeCertificate("old", -10 * kDay, -kDay);
  EXPECT_THAT(CheckServerCertificate(pem.cert, "old.crt", pem.key, "old.key",
                                     absl::Now()),
              StatusIs(kInvalid, AllOf(HasSubstr("--tls-cert old.crt"),
                                       HasSubstr("CN = old"),
                                       HasSubstr("expired at 20"))));
}

TEST(TlsFilesTest, FilesThatAreNotPemNameTheFlagAndFile) {
  const Pem pem = MakeCertificate("x", -kDay, kDay);
  EXPECT_THAT(
      CheckServerCertificate("hello", "c.pem", pem.key, "k.pem", absl::Now()),
      StatusIs(kInvalid, AllOf(HasSubstr("--tls-cert c.pem"),
                               HasSubstr("not a PEM certificate"))));
  // A certificate where the key belongs.
  EXPECT_THAT(
      CheckServerCertificate(pem.cert, "c.pem", pem.cert, "k.pem", absl::Now()),
      StatusIs(kInvalid, AllOf(HasSubstr("--tls-key k.pem"),
                               HasSubstr("not a PEM private key"))));
}

TEST(TlsFilesTest, ClientCaFileNeedsCertificatesThatParse) {
  const Pem a = MakeCertificate("ca-a", -kDay, kDay);
  const Pem b = MakeCertificate("ca-b", -kDay, kDay);
  EXPECT_THAT(CheckCaCertificates(a.cert + b.cert, "ca.pem"), IsOk());
  EXPECT_THAT(CheckCaCertificates("", "ca.pem"),
              StatusIs(kInvalid, HasSubstr("--tls-client-ca ca.pem: holds no "
                                           "PEM certificate")));
  EXPECT_THAT(CheckCaCertificates(a.key, "ca.pem"),
              StatusIs(kInvalid, HasSubstr("holds no PEM certificate")));
  std::string damaged = b.cert;
  damaged.replace(damaged.find('\n') + 5, 8, "!!!!!!!!");
  EXPECT_THAT(CheckCaCertificates(a.cert + damaged, "ca.pem"),
              StatusIs(kInvalid, HasSubstr("certificate 2 does not parse")));
}

}  // namespace
}  // namespace metaopt::server
