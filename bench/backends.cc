// metaopt-bench's backends: the study engine in this process, or a server
// reached through metaopt::MetaoptClient (bench_lib.h, "Backends").
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/bench_lib.h"
#include "clients/cpp/metaopt_client.h"
#include "core/common/status_macros.h"
#include "core/storage/storage.h"
#include "core/study/study_engine.h"

namespace metaopt::bench {
namespace {

// Thread-safe (StudyEngine is).
class EngineBackend final : public StudyBackend {
 public:
  EngineBackend(std::unique_ptr<storage::Storage> storage,
                std::shared_ptr<registry::ModelManager> models)
      : storage_(std::move(storage)),
        models_(std::move(models)),
        engine_(storage_.get(), models_.get()) {}

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) override {
    return engine_.CreateStudy(request);
  }
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) override {
    return engine_.Suggest(request);
  }
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) override {
    return engine_.Observe(request);
  }
  absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request) override {
    return engine_.ReportIntermediate(request);
  }
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) override {
    return engine_.DeleteStudy(request);
  }
  absl::StatusOr<v1::ListModelsResponse> ListModels() override {
    return engine_.ListModels(v1::ListModelsRequest());
  }
  std::string Describe() const override {
    return models_ != nullptr ? absl::StrCat("in-process (registry ",
                                             models_->base_path(), ")")
                              : "in-process";
  }

 private:
  std::unique_ptr<storage::Storage> storage_;
  std::shared_ptr<registry::ModelManager> models_;
  study::StudyEngine engine_;
};

// Thread-safe (MetaoptClient is).
class ServerBackend final : public StudyBackend {
 public:
  ServerBackend(std::unique_ptr<MetaoptClient> client, std::string address)
      : client_(std::move(client)), address_(std::move(address)) {}

  absl::StatusOr<v1::CreateStudyResponse> CreateStudy(
      const v1::CreateStudyRequest& request) override {
    return client_->CreateStudy(request);
  }
  absl::StatusOr<v1::SuggestResponse> Suggest(
      const v1::SuggestRequest& request) override {
    return client_->Suggest(request);
  }
  absl::StatusOr<v1::ObserveResponse> Observe(
      const v1::ObserveRequest& request) override {
    return client_->Observe(request);
  }
  absl::StatusOr<v1::ReportIntermediateResponse> ReportIntermediate(
      const v1::ReportIntermediateRequest& request) override {
    return client_->ReportIntermediate(request);
  }
  absl::StatusOr<v1::DeleteStudyResponse> DeleteStudy(
      const v1::DeleteStudyRequest& request) override {
    return client_->DeleteStudy(request);
  }
  absl::StatusOr<v1::ListModelsResponse> ListModels() override {
    return client_->ListModels(v1::ListModelsRequest());
  }
  std::string Describe() const override {
    return absl::StrCat("server ", address_);
  }

 private:
  std::unique_ptr<MetaoptClient> client_;
  std::string address_;
};

}  // namespace

RegistryOpener DefaultRegistryOpener() {
  return [](const std::string& dir)
             -> absl::StatusOr<std::shared_ptr<registry::ModelManager>> {
    std::error_code error;
    if (!std::filesystem::is_directory(dir, error)) {
      return absl::NotFoundError(
          absl::StrCat("--registry ", dir, ": not a directory"));
    }
    registry::ModelManager::Options options;
    options.base_path = dir;  // poll_interval 0: no poll thread
    METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<registry::ModelManager> manager,
                             registry::ModelManager::Create(options));
    return std::shared_ptr<registry::ModelManager>(std::move(manager));
  };
}

absl::StatusOr<std::unique_ptr<StudyBackend>> OpenInProcessBackend(
    const std::string& registry_dir, const RegistryOpener& opener) {
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<storage::Storage> storage,
                           storage::OpenInMemoryStorage());
  std::shared_ptr<registry::ModelManager> models;
  if (!registry_dir.empty()) {
    if (!opener) {
      return absl::FailedPreconditionError(
          absl::StrCat("--registry ", registry_dir,
                       ": no model registry support in this run (empty "
                       "registry opener)"));
    }
    METAOPT_ASSIGN_OR_RETURN(models, opener(registry_dir));
  }
  return std::unique_ptr<StudyBackend>(
      new EngineBackend(std::move(storage), std::move(models)));
}

absl::StatusOr<std::unique_ptr<StudyBackend>> OpenServerBackend(
    const std::string& address) {
  MetaoptClient::Options options;
  options.address = address;
  // CreateStudy carries the whole catalogue (up to ~60k configurations).
  options.timeout = absl::Minutes(5);
  METAOPT_ASSIGN_OR_RETURN(std::unique_ptr<MetaoptClient> client,
                           MetaoptClient::Create(options));
  return std::unique_ptr<StudyBackend>(
      new ServerBackend(std::move(client), address));
}

}  // namespace metaopt::bench
