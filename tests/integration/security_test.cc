// The security model of docs/security.md against the real server on
// 127.0.0.1: TLS and mutual TLS with throwaway certificates made by the openssl
// CLI, bearer tokens, owner namespaces and the per-owner study quota.
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "clients/cpp/metaopt_client.h"
#include "gmock/gmock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tests/integration/server_process.h"
#include "tests/testutil/status_matchers.h"
#include "tests/testutil/temp_dir.h"
#include "tests/testutil/test_server.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kAliceToken[] = "alice-token-0123456789abcdef";
constexpr char kBobToken[] = "bob-token-fedcba9876543210";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A throwaway PKI made with the openssl CLI: a CA with a server certificate
// for 127.0.0.1/localhost and a client certificate, and a second, untrusted CA
// with its own client certificate.
class TestPki {
 public:
  TestPki() {
    const std::string ext_server = dir_.File("server.ext");
    std::ofstream(ext_server)
        << "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
           "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    const std::string ext_client = dir_.File("client.ext");
    std::ofstream(ext_client)
        << "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n";
    ok_ = MakeCa("ca") && MakeCa("rogue-ca") &&
          MakeLeaf("server", "ca", ext_server) &&
          MakeLeaf("client", "ca", ext_client) &&
          MakeLeaf("rogue-client", "rogue-ca", ext_client);
  }

  bool ok() const { return ok_; }
  std::string File(const std::string& name) const { return dir_.File(name); }
  std::string Pem(const std::string& name) const {
    return ReadFile(File(name));
  }

 private:
  bool Run(const std::string& command) {
    const std::string full = absl::StrCat("cd '", dir_.path(), "' && ", command,
                                          " >>openssl.log 2>&1");
    const int rc = std::system(full.c_str());
    if (rc != 0) {
      ADD_FAILURE() << "failed (" << rc << "): " << command << "\n"
                    << ReadFile(dir_.File("openssl.log"));
    }
    return rc == 0;
  }
  bool MakeCa(const std::string& name) {
    return Run(absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
        "-nodes -days 2 -subj /CN=metaopt-test-",
        name, " -keyout ", name, ".key -out ", name, ".pem"));
  }
  bool MakeLeaf(const std::string& name, const std::string& ca,
                const std::string& ext) {
    return Run(absl::StrCat(
               "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
               "-nodes -subj /CN=",
               name, " -keyout ", name, ".key -out ", name, ".csr")) &&
           Run(absl::StrCat("openssl x509 -req -days 2 -in ", name, ".csr -CA ",
                            ca, ".pem -CAkey ", ca,
                            ".key -CAcreateserial -extfile ", ext, " -out ",
                            name, ".pem"));
  }

  ScopedTempDir dir_;
  bool ok_ = false;
};

// Channel credentials trusting `ca` (a PEM file of `pki`), optionally with a
// client certificate.
std::shared_ptr<grpc::ChannelCredentials> TlsCredentials(
    const TestPki& pki, const std::string& ca, const std::string& client = "") {
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = pki.Pem(ca + ".pem");
  if (!client.empty()) {
    ssl.pem_cert_chain = pki.Pem(client + ".pem");
    ssl.pem_private_key = pki.Pem(client + ".key");
  }
  return grpc::SslCredentials(ssl);
}

// A context with a deadline and, if `token` is set, its bearer metadata.
std::unique_ptr<grpc::ClientContext> Context(const std::string& token) {
  std::unique_ptr<grpc::ClientContext> context = ContextWithDeadline();
  if (!token.empty()) {
    context->AddMetadata("authorization", absl::StrCat("Bearer ", token));
  }
  return context;
}

class SecurityTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki(); }
  static void TearDownTestSuite() {
    delete pki_;
    pki_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(pki_->ok()); }

  // TLS with the test CA's server certificate, tokens for alice and bob.
  server::ServerOptions Options(bool mutual_tls = false) {
    server::ServerOptions options;
    options.db_path = dir_.File("metaopt.db");
    options.models_dir = dir_.File("models");
    options.tls_cert_file = pki_->File("server.pem");
    options.tls_key_file = pki_->File("server.key");
    if (mutual_tls) options.tls_client_ca_file = pki_->File("ca.pem");
    options.tokens_file = dir_.File("tokens");
    std::ofstream(options.tokens_file) << "# test owners\nalice:" << kAliceToken
                                       << "\nbob:" << kBobToken << "\n";
    return options;
  }

  std::unique_ptr<v1::OptimizerService::Stub> Stub(
      const TestServer& server,
      std::shared_ptr<grpc::ChannelCredentials> credentials) {
    return v1::OptimizerService::NewStub(
        grpc::CreateChannel(server.address(), credentials));
  }

  static TestPki* pki_;
  ScopedTempDir dir_;
};

TestPki* SecurityTest::pki_ = nullptr;

grpc::Status Create(v1::OptimizerService::Stub& stub, const std::string& token,
                    const std::string& id, const v1::StudySpec& spec,
                    v1::CreateStudyResponse* response = nullptr) {
  v1::CreateStudyRequest request;
  request.set_study_id(id);
  *request.mutable_spec() = spec;
  v1::CreateStudyResponse ignored;
  return stub.CreateStudy(Context(token).get(), request,
                          response != nullptr ? response : &ignored);
}

// ----- TLS -----

TEST_F(SecurityTest, TlsClientWithTokenIsServed) {
  TestServer server(Options());
  auto stub = Stub(server, TlsCredentials(*pki_, "ca"));
  v1::CreateStudyResponse created;
  grpc::Status status =
      Create(*stub, kAliceToken, "svm", PipelineSpec(), &created);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(created.created());
  EXPECT_EQ(created.study().owner(), "alice");
}

TEST_F(SecurityTest, PlaintextClientCannotTalkToTlsServer) {
  TestServer server(Options());
  auto stub = Stub(server, grpc::InsecureChannelCredentials());
  grpc::Status status = Create(*stub, kAliceToken, "svm", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(SecurityTest, ClientRejectsServerCertificateFromAnotherCa) {
  TestServer server(Options());
  auto stub = Stub(server, TlsCredentials(*pki_, "rogue-ca"));
  grpc::Status status = Create(*stub, kAliceToken, "svm", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();
}

TEST_F(SecurityTest, MutualTlsRequiresAClientCertificateFromTheClientCa) {
  TestServer server(Options(/*mutual_tls=*/true));
  auto without_cert = Stub(server, TlsCredentials(*pki_, "ca"));
  grpc::Status status = Create(*without_cert, kAliceToken, "a", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();

  auto rogue = Stub(server, TlsCredentials(*pki_, "ca", "rogue-client"));
  status = Create(*rogue, kAliceToken, "a", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE)
      << status.error_message();

  auto with_cert = Stub(server, TlsCredentials(*pki_, "ca", "client"));
  status = Create(*with_cert, kAliceToken, "a", PipelineSpec());
  EXPECT_TRUE(status.ok()) << status.error_message();
  // A certificate is not a token: the call still needs one.
  status = Create(*with_cert, "", "b", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
}

// ----- Tokens -----

TEST_F(SecurityTest, CallsWithoutAValidTokenAreUnauthenticated) {
  TestServer server(Options());
  auto stub = Stub(server, TlsCredentials(*pki_, "ca"));
  ASSERT_TRUE(Create(*stub, kAliceToken, "svm", PipelineSpec()).ok());
  for (const std::string& token :
       {std::string(), std::string("wrong-token-0123456789"),
        std::string(kAliceToken) + "x", std::string(kAliceToken).substr(1)}) {
    SCOPED_TRACE(token);
    grpc::Status status = Create(*stub, token, "svm2", PipelineSpec());
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_THAT(status.error_message(), HasSubstr("Bearer <token>"));

    v1::GetStudyRequest get;
    get.set_study_id("svm");
    v1::GetStudyResponse study;
    status = stub->GetStudy(Context(token).get(), get, &study);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);

    v1::ListModelsResponse models;
    status = stub->ListModels(Context(token).get(), v1::ListModelsRequest(),
                              &models);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  }
  // Another scheme, and two authorization entries.
  auto basic = ContextWithDeadline();
  basic->AddMetadata("authorization", absl::StrCat("Basic ", kAliceToken));
  v1::ListStudiesResponse list;
  EXPECT_EQ(stub->ListStudies(basic.get(), v1::ListStudiesRequest(), &list)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  auto twice = Context(kAliceToken);
  twice->AddMetadata("authorization", absl::StrCat("Bearer ", kBobToken));
  EXPECT_EQ(stub->ListStudies(twice.get(), v1::ListStudiesRequest(), &list)
                .error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  // Nothing was created by the refused calls.
  ASSERT_TRUE(stub->ListStudies(Context(kAliceToken).get(),
                                v1::ListStudiesRequest(), &list)
                  .ok());
  EXPECT_EQ(list.studies_size(), 1);
}

TEST_F(SecurityTest, HealthIsOpenWithoutToken) {
  TestServer server(Options());
  auto health = grpc::health::v1::Health::NewStub(
      grpc::CreateChannel(server.address(), TlsCredentials(*pki_, "ca")));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status =
      health->Check(ContextWithDeadline().get(), request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.status(), grpc::health::v1::HealthCheckResponse::SERVING);
}

// ----- Owner namespaces -----

TEST_F(SecurityTest, OwnersCannotReachEachOthersStudies) {
  TestServer server(Options());
  auto stub = Stub(server, TlsCredentials(*pki_, "ca"));
  ASSERT_TRUE(Create(*stub, kAliceToken, "private", PipelineSpec()).ok());
  v1::SuggestRequest suggest;
  suggest.set_study_id("private");
  v1::SuggestResponse suggested;
  ASSERT_TRUE(
      stub->Suggest(Context(kAliceToken).get(), suggest, &suggested).ok());
  ASSERT_EQ(suggested.trials_size(), 1);

  // What bob gets for alice's study is exactly what he gets for a study that
  // does not exist (same code, same message up to the id): no existence leak.
  const auto as_bob = [&](const std::string& id) {
    std::vector<grpc::Status> statuses;
    v1::GetStudyRequest get;
    get.set_study_id(id);
    v1::GetStudyResponse study;
    statuses.push_back(stub->GetStudy(Context(kBobToken).get(), get, &study));
    v1::SuggestRequest s;
    s.set_study_id(id);
    v1::SuggestResponse trials;
    statuses.push_back(stub->Suggest(Context(kBobToken).get(), s, &trials));
    v1::ObserveRequest observe;
    observe.set_study_id(id);
    observe.set_trial_id(1);
    observe.set_value(0.5);
    v1::ObserveResponse observed;
    statuses.push_back(
        stub->Observe(Context(kBobToken).get(), observe, &observed));
    v1::FineTuneRequest fine_tune;
    fine_tune.set_study_id(id);
    v1::FineTuneResponse tuned;
    statuses.push_back(
        stub->FineTune(Context(kBobToken).get(), fine_tune, &tuned));
    v1::GetTrialRequest get_trial;
    get_trial.set_study_id(id);
    get_trial.set_trial_id(1);
    v1::GetTrialResponse trial;
    statuses.push_back(
        stub->GetTrial(Context(kBobToken).get(), get_trial, &trial));
    v1::ListTrialsRequest list_trials;
    list_trials.set_study_id(id);
    v1::ListTrialsResponse listed;
    statuses.push_back(
        stub->ListTrials(Context(kBobToken).get(), list_trials, &listed));
    v1::DeleteStudyRequest del;
    del.set_study_id(id);
    v1::DeleteStudyResponse deleted;
    statuses.push_back(
        stub->DeleteStudy(Context(kBobToken).get(), del, &deleted));
    return statuses;
  };
  const std::vector<grpc::Status> on_private = as_bob("private");
  const std::vector<grpc::Status> on_absent = as_bob("absent0");
  ASSERT_EQ(on_private.size(), on_absent.size());
  for (size_t i = 0; i < on_private.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(on_private[i].error_code(), grpc::StatusCode::NOT_FOUND)
        << on_private[i].error_message();
    EXPECT_EQ(on_absent[i].error_code(), grpc::StatusCode::NOT_FOUND);
    std::string message = on_private[i].error_message();
    message.replace(message.find("private"), 7, "absent0");
    EXPECT_EQ(message, on_absent[i].error_message());
  }
  v1::ListStudiesResponse bobs;
  ASSERT_TRUE(stub->ListStudies(Context(kBobToken).get(),
                                v1::ListStudiesRequest(), &bobs)
                  .ok());
  EXPECT_THAT(bobs.studies(), IsEmpty());

  // Alice's study is untouched: still there, its trial still ACTIVE.
  v1::GetTrialRequest get_trial;
  get_trial.set_study_id("private");
  get_trial.set_trial_id(1);
  v1::GetTrialResponse trial;
  ASSERT_TRUE(
      stub->GetTrial(Context(kAliceToken).get(), get_trial, &trial).ok());
  EXPECT_EQ(trial.trial().state(), v1::TRIAL_STATE_ACTIVE);
}

TEST_F(SecurityTest, OwnersUseTheSameStudyIdIndependently) {
  TestServer server(Options());
  auto stub = Stub(server, TlsCredentials(*pki_, "ca"));
  v1::CreateStudyResponse alices, bobs;
  ASSERT_TRUE(Create(*stub, kAliceToken, "exp",
                     PipelineSpec(v1::ALGORITHM_KIND_RANDOM,
                                  /*seed=*/1),
                     &alices)
                  .ok());
  // Another spec under the same id: for bob it is a new study, not
  // ALREADY_EXISTS.
  ASSERT_TRUE(Create(*stub, kBobToken, "exp",
                     PipelineSpec(v1::ALGORITHM_KIND_RANDOM, /*seed=*/2), &bobs)
                  .ok());
  EXPECT_TRUE(alices.created());
  EXPECT_TRUE(bobs.created());
  EXPECT_EQ(bobs.study().owner(), "bob");
  EXPECT_EQ(bobs.study().spec().seed(), 2u);

  // Trials are counted per owner's study.
  v1::SuggestRequest suggest;
  suggest.set_study_id("exp");
  suggest.set_count(3);
  v1::SuggestResponse response;
  ASSERT_TRUE(
      stub->Suggest(Context(kAliceToken).get(), suggest, &response).ok());
  EXPECT_EQ(response.trials(0).id(), 1);
  suggest.set_count(1);
  ASSERT_TRUE(stub->Suggest(Context(kBobToken).get(), suggest, &response).ok());
  EXPECT_EQ(response.trials(0).id(), 1);
  v1::GetStudyRequest get;
  get.set_study_id("exp");
  v1::GetStudyResponse study;
  ASSERT_TRUE(stub->GetStudy(Context(kAliceToken).get(), get, &study).ok());
  EXPECT_EQ(study.study().trial_count(), 3);
  EXPECT_EQ(study.study().spec().seed(), 1u);
  ASSERT_TRUE(stub->GetStudy(Context(kBobToken).get(), get, &study).ok());
  EXPECT_EQ(study.study().trial_count(), 1);

  // Deleting bob's leaves alice's; both persist across a restart.
  v1::DeleteStudyRequest del;
  del.set_study_id("exp");
  v1::DeleteStudyResponse deleted;
  ASSERT_TRUE(stub->DeleteStudy(Context(kBobToken).get(), del, &deleted).ok());
  server.Restart();
  stub = Stub(server, TlsCredentials(*pki_, "ca"));
  EXPECT_EQ(stub->GetStudy(Context(kBobToken).get(), get, &study).error_code(),
            grpc::StatusCode::NOT_FOUND);
  ASSERT_TRUE(stub->GetStudy(Context(kAliceToken).get(), get, &study).ok());
  EXPECT_EQ(study.study().trial_count(), 3);
  EXPECT_EQ(study.study().owner(), "alice");
}

TEST_F(SecurityTest, StudyQuotaIsPerOwner) {
  server::ServerOptions options = Options();
  options.max_studies_per_owner = 2;
  TestServer server(options);
  auto stub = Stub(server, TlsCredentials(*pki_, "ca"));
  ASSERT_TRUE(Create(*stub, kAliceToken, "one", PipelineSpec()).ok());
  ASSERT_TRUE(Create(*stub, kAliceToken, "two", PipelineSpec()).ok());
  grpc::Status status = Create(*stub, kAliceToken, "three", PipelineSpec());
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(),
              AllOf(HasSubstr("\"alice\""), HasSubstr("max_studies_per_owner"),
                    HasSubstr("is 2")));
  // Create-or-get of an existing study still answers.
  v1::CreateStudyResponse again;
  status = Create(*stub, kAliceToken, "two", PipelineSpec(), &again);
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(again.created());
  // Bob has a quota of his own.
  EXPECT_TRUE(Create(*stub, kBobToken, "three", PipelineSpec()).ok());
  // Deleting frees a place.
  v1::DeleteStudyRequest del;
  del.set_study_id("one");
  v1::DeleteStudyResponse deleted;
  ASSERT_TRUE(
      stub->DeleteStudy(Context(kAliceToken).get(), del, &deleted).ok());
  EXPECT_TRUE(Create(*stub, kAliceToken, "three", PipelineSpec()).ok());
}

// ----- Configuration errors -----

TEST_F(SecurityTest, BadSecurityOptionsStopTheServerFromStarting) {
  server::ServerOptions options = Options();
  std::ofstream(options.tokens_file, std::ios::trunc)
      << "alice:" << kAliceToken << "\nbob:" << kAliceToken << "\n";
  EXPECT_THAT(server::Server::BuildAndStart(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(options.tokens_file + ":2:")));

  options = Options();
  options.tokens_file = dir_.File("absent-tokens");
  EXPECT_THAT(
      server::Server::BuildAndStart(options).status(),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent-tokens")));

  options = Options();
  options.tls_key_file.clear();
  EXPECT_THAT(server::Server::BuildAndStart(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--tls-cert and --tls-key")));

  options = Options();
  options.tls_cert_file.clear();
  options.tls_key_file.clear();
  options.tls_client_ca_file = pki_->File("ca.pem");
  EXPECT_THAT(server::Server::BuildAndStart(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--tls-client-ca")));

  options = Options();
  options.tls_cert_file = options.tokens_file;
  EXPECT_THAT(server::Server::BuildAndStart(options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("--tls-cert"), HasSubstr("PEM"))));
}

// ----- Clients -----

TEST_F(SecurityTest, CppClientSendsTokenOverMutualTls) {
  TestServer server(Options(/*mutual_tls=*/true));
  MetaoptClient::Options options;
  options.address = server.address();
  options.timeout = absl::Seconds(30);
  options.token = kBobToken;
  options.tls_ca_file = pki_->File("ca.pem");
  options.tls_cert_file = pki_->File("client.pem");
  options.tls_key_file = pki_->File("client.key");
  auto client = MetaoptClient::Create(options);
  ASSERT_THAT(client, IsOk());
  v1::CreateStudyRequest request;
  request.set_study_id("from-client");
  *request.mutable_spec() = PipelineSpec();
  auto created = (*client)->CreateStudy(request);
  ASSERT_THAT(created, IsOk());
  EXPECT_EQ(created->study().owner(), "bob");

  options.token = "";
  auto anonymous = MetaoptClient::Create(options);
  ASSERT_THAT(anonymous, IsOk());
  EXPECT_THAT(
      (*anonymous)->ListStudies(v1::ListStudiesRequest()),
      StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("missing")));

  options.tls_key_file.clear();
  EXPECT_THAT(
      MetaoptClient::Create(options),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tls_key_file")));
  options.tls_key_file = dir_.File("absent.key");
  EXPECT_THAT(MetaoptClient::Create(options),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("absent.key")));
}

#ifdef METAOPT_SERVER_BINARY
// The start-up warning for a server reachable beyond loopback names what is
// missing, and there is none with TLS and tokens (or on loopback).
TEST_F(SecurityTest, BeyondLoopbackWarningSaysWhatIsMissing) {
  const server::ServerOptions secure = Options();
  const std::vector<std::string> tls = {"--tls-cert", secure.tls_cert_file,
                                        "--tls-key", secure.tls_key_file};
  const std::vector<std::string> tokens = {"--tokens", secure.tokens_file};
  struct Case {
    std::string listen;
    std::vector<std::string> flags;
    std::string warning;  // empty: none
  };
  std::vector<std::string> both = tls;
  both.insert(both.end(), tokens.begin(), tokens.end());
  const std::vector<Case> cases = {
      {"0.0.0.0:0", {}, "without TLS or authentication"},
      {"0.0.0.0:0", tokens, "without TLS (--tls-cert)"},
      {"0.0.0.0:0", tls, "without authentication (--tokens)"},
      {"0.0.0.0:0", both, ""},
      {"127.0.0.1:0", {}, ""},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"--listen", c.listen,
                                     "--db",     dir_.File("warn.db"),
                                     "--models", dir_.File("models")};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    ServerProcess process(METAOPT_SERVER_BINARY, args, dir_.File("warn.log"));
    ASSERT_NE(process.Start(), 0);
    process.Kill(SIGTERM);  // the warning is logged before shutdown begins
    const std::string log = process.Log();
    SCOPED_TRACE(log);
    if (c.warning.empty()) {
      EXPECT_THAT(log, Not(HasSubstr("listening beyond loopback")));
    } else {
      EXPECT_THAT(log, AllOf(HasSubstr("listening beyond loopback"),
                             HasSubstr(c.warning)));
    }
  }
}
#endif

#ifdef METAOPTCTL_PATH
TEST_F(SecurityTest, MetaoptctlTakesTokenFromEnvironmentAndTlsOptions) {
  TestServer server(Options());
  ASSERT_TRUE(Create(*Stub(server, TlsCredentials(*pki_, "ca")), kAliceToken,
                     "mine", PipelineSpec())
                  .ok());
  const std::string out = dir_.File("ctl.out");
  const auto ctl = [&](const std::string& env, const std::string& args) {
    const std::string command =
        absl::StrCat(env, " '", METAOPTCTL_PATH, "' --server ",
                     server.address(), " ", args, " >'", out, "' 2>&1");
    const int rc = std::system(command.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string tls = absl::StrCat("--tls-ca '", pki_->File("ca.pem"), "'");
  EXPECT_EQ(
      ctl(absl::StrCat("METAOPT_TOKEN=", kAliceToken), tls + " list-studies"),
      0)
      << ReadFile(out);
  EXPECT_THAT(ReadFile(out), HasSubstr("\"mine\""));
  EXPECT_EQ(ctl("", absl::StrCat(tls, " --token ", kBobToken, " list-studies")),
            0)
      << ReadFile(out);
  EXPECT_THAT(ReadFile(out), Not(HasSubstr("\"mine\"")));
  EXPECT_EQ(ctl("METAOPT_TOKEN=", tls + " list-studies"), 1);
  EXPECT_THAT(ReadFile(out), HasSubstr("metaoptctl: UNAUTHENTICATED"));
  EXPECT_EQ(ctl(absl::StrCat("METAOPT_TOKEN=", kAliceToken), "list-studies"),
            1);
  EXPECT_THAT(ReadFile(out), HasSubstr("metaoptctl: UNAVAILABLE"));
}
#endif

#ifdef METAOPT_LOADGEN_PATH
TEST_F(SecurityTest, LoadgenTakesTokenAndMutualTlsOptions) {
  TestServer server(Options(/*mutual_tls=*/true));
  const std::string out = dir_.File("loadgen.out");
  // 5 loops (Suggest + Observe) of 2 clients on study "tls-0", kept.
  const auto loadgen = [&](const std::string& env, const std::string& args) {
    const std::string command = absl::StrCat(
        env, " '", METAOPT_LOADGEN_PATH, "' --server ", server.address(),
        " --clients 2 --studies 1 --duration 0 --total-ops 10 --quiet "
        "--format json --study-prefix tls --keep-studies ",
        args, " >'", out, "' 2>&1");
    const int rc = std::system(command.c_str());
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  };
  const std::string ca = absl::StrCat("--tls-ca '", pki_->File("ca.pem"), "'");
  const std::string mutual_tls =
      absl::StrCat(ca, " --tls-cert '", pki_->File("client.pem"),
                   "' --tls-key '", pki_->File("client.key"), "'");
  EXPECT_EQ(loadgen(absl::StrCat("METAOPT_TOKEN=", kBobToken), mutual_tls), 0)
      << ReadFile(out);
  EXPECT_EQ(loadgen("", absl::StrCat(mutual_tls, " --token ", kBobToken)), 0)
      << ReadFile(out);
  // The load ran as bob: his study holds both runs' trials.
  auto stub = v1::OptimizerService::NewStub(grpc::CreateChannel(
      server.address(), TlsCredentials(*pki_, "ca", "client")));
  v1::GetStudyRequest get;
  get.set_study_id("tls-0");
  v1::GetStudyResponse study;
  ASSERT_TRUE(stub->GetStudy(Context(kBobToken).get(), get, &study).ok());
  EXPECT_EQ(study.study().trial_count(), 10);
  EXPECT_EQ(study.study().owner(), "bob");

  EXPECT_EQ(loadgen("METAOPT_TOKEN=", mutual_tls), 1);
  EXPECT_THAT(ReadFile(out), HasSubstr("UNAUTHENTICATED"));
  EXPECT_EQ(loadgen(absl::StrCat("METAOPT_TOKEN=", kBobToken), ca), 1);
  EXPECT_THAT(ReadFile(out), HasSubstr("UNAVAILABLE"));
  // A certificate without its key is a usage error.
  EXPECT_EQ(loadgen(absl::StrCat("METAOPT_TOKEN=", kBobToken),
                    absl::StrCat(ca, " --tls-cert '",
                                 pki_->File("client.pem"), "'")),
            2);
  EXPECT_THAT(ReadFile(out), HasSubstr("tls_cert_file, tls_key_file"));
}
#endif

}  // namespace
}  // namespace metaopt::testing
