#include "core/registry/model_manager.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <system_error>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/common/logging.h"
#include "core/common/status_macros.h"
#include "core/common/strings.h"

namespace metaopt::registry {
namespace {

namespace fs = std::filesystem;

constexpr char kTempDirPrefix[] = ".tmp-";

// ---- Files ----

// A string that changes when the files of a version directory change: the
// directory's inode and mtime and each entry's name, inode, size and mtime.
// Empty if the directory cannot be read.
std::string Fingerprint(const std::string& dir) {
  auto stat_text = [](const std::string& path) -> std::string {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return "?";
    return absl::StrCat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                        st.st_mtim.tv_nsec);
  };
  std::vector<std::string> parts = {stat_text(dir)};
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec);
       !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    parts.push_back(absl::StrCat(name, "=", stat_text(it->path().string())));
  }
  std::sort(parts.begin() + 1, parts.end());
  return absl::StrJoin(parts, ";");
}

bool IsDirectory(const fs::directory_entry& entry) {
  std::error_code ec;
  return entry.is_directory(ec) && !ec;  // follows symlinks
}

}  // namespace

// ---- Free functions ----

std::string ModelReference::ToString() const {
  return version == 0 ? name : absl::StrCat(name, "@", version);
}

absl::StatusOr<ModelReference> ParseModelReference(std::string_view spec,
                                                   std::string_view field) {
  if (spec.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        ToAbsl(field), ": empty (expected \"name\" or \"name@version\")"));
  }
  const size_t at = spec.find('@');
  ModelReference reference;
  reference.name = std::string(spec.substr(0, at));
  METAOPT_RETURN_IF_ERROR(ValidateModelName(reference.name, field));
  if (at != std::string_view::npos) {
    const std::string_view version = spec.substr(at + 1);
    const std::optional<int64_t> parsed = ParseVersionDirName(version);
    if (!parsed.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          ToAbsl(field), ": ", Quote(ToAbsl(spec)), ": version ", Quote(ToAbsl(version)),
          " is not a positive integer without sign or leading zeros"));
    }
    reference.version = *parsed;
  }
  return reference;
}

v1::Model Describe(const LoadedModel& model) {
  v1::Model out;
  out.set_name(model.name);
  out.set_version(model.version);
  out.set_kind(model.artifact.kind());
  out.set_search_space_summary(model.space.Summary());
  const v1::TrainingProvenance& provenance = model.artifact.provenance();
  const int tasks = provenance.task_ids_size();
  const std::string task_count =
      absl::StrCat(tasks, tasks == 1 ? " task" : " tasks");
  if (!provenance.data_name().empty()) {
    out.set_training_data(
        provenance.split().empty()
            ? absl::StrCat(provenance.data_name(), " (", task_count, ")")
            : absl::StrCat(provenance.data_name(), " (", provenance.split(),
                           ", ", task_count, ")"));
  }
  *out.mutable_create_time() = provenance.has_create_time()
                                   ? provenance.create_time()
                                   : model.manifest.create_time();
  out.mutable_validation_metrics()->insert(
      provenance.validation_metrics().begin(),
      provenance.validation_metrics().end());
  out.set_portfolio_size(model.artifact.portfolio_size());
  if (model.artifact.has_task_design()) {
    const v1::TaskDesign& design = model.artifact.task_design();
    out.set_task_design(absl::StrCat(
        design.method(), ", ",
        design.projection().shape().empty() ? design.feature_names_size()
                                            : design.projection().shape(0),
        " dimensions, ", design.feature_names_size(), " meta-features, ",
        design.tasks_size(), " archived tasks, ", design.neighbours(),
        " neighbours"));
  }
  return out;
}

// ---- ModelManager ----

absl::StatusOr<std::unique_ptr<ModelManager>> ModelManager::Create(
    const Options& options) {
  if (options.base_path.empty()) {
    return absl::InvalidArgumentError("model registry: base_path is empty");
  }
  if (options.poll_interval < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model registry: poll_interval ",
        absl::FormatDuration(options.poll_interval), " is negative"));
  }
  auto manager = absl::WrapUnique(new ModelManager(options));
  const absl::Status status = manager->PollOnce();
  if (!status.ok()) {
    LogWarning(absl::StrCat("model registry: no models loaded yet: ",
                            status.message()));
  }
  if (options.poll_interval > absl::ZeroDuration()) {
    {
      MutexLock lock(&manager->thread_mu_);
      if (!status.ok())
        manager->last_poll_error_ = std::string(status.message());
    }
    ModelManager* raw = manager.get();
    manager->poll_thread_ = std::thread([raw] { raw->PollLoop(); });
  }
  return manager;
}

ModelManager::ModelManager(Options options) : options_(std::move(options)) {}

ModelManager::~ModelManager() {
  {
    MutexLock lock(&thread_mu_);
    stop_ = true;
  }
  if (poll_thread_.joinable()) poll_thread_.join();
}

void ModelManager::PollLoop() {
  MutexLock lock(&thread_mu_);
  while (true) {
    // Wakes up early when the destructor sets stop_.
    thread_mu_.AwaitWithTimeout(absl::Condition(&stop_),
                                options_.poll_interval);
    if (stop_) return;
    thread_mu_.Unlock();
    const absl::Status status = PollOnce();
    thread_mu_.Lock();
    // Log changes only: an outage is reported once, and so is its end.
    const std::string error = status.ok() ? "" : std::string(status.message());
    if (error != last_poll_error_) {
      if (error.empty()) {
        LogInfo(absl::StrCat("model registry ", options_.base_path,
                             " is readable again"));
      } else {
        LogError(absl::StrCat(
            "model registry poll failed (models stay loaded): ", error));
      }
      last_poll_error_ = error;
    }
  }
}

void ModelManager::WarnOnce(const std::string& key,
                            const std::string& message) {
  if (warned_.insert(key).second) LogWarning(message);
}

absl::Status ModelManager::PollOnce() {
  MutexLock poll_lock(&poll_mu_);
  const std::string& base = options_.base_path;
  std::error_code ec;
  const fs::file_status base_status = fs::status(base, ec);
  if (!fs::exists(base_status)) {
    return absl::NotFoundError(
        absl::StrCat("model registry ", base, " does not exist",
                     ec && ec != std::errc::no_such_file_or_directory
                         ? absl::StrCat(" or is not accessible: ", ec.message())
                         : ""));
  }
  if (!fs::is_directory(base_status)) {
    return absl::FailedPreconditionError(
        absl::StrCat("model registry ", base, " is not a directory"));
  }
  // List everything first, so that an unreadable base path changes nothing.
  std::vector<std::string> names;
  fs::directory_iterator it(base, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.empty() || name.front() == '.') continue;  // hidden
    if (!IsDirectory(*it)) continue;                    // README and such
    if (!ValidateModelName(name).ok()) {
      WarnOnce(it->path().string(),
               absl::StrCat(
                   "model registry: skipping ", it->path().string(), ": ",
                   Quote(name),
                   " is not a model name ([A-Za-z0-9][A-Za-z0-9._-]{0,127})"));
      continue;
    }
    names.push_back(name);
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot list model registry ", base, ": ", ec.message()));
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    PollModel(name, absl::StrCat(base, "/", name));
  }
  return absl::OkStatus();
}

void ModelManager::PollModel(const std::string& name,
                             const std::string& model_dir) {
  std::vector<int64_t> versions;
  std::error_code ec;
  fs::directory_iterator it(model_dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (absl::StartsWith(entry, kTempDirPrefix))
      continue;  // a publish in progress
    if (!IsDirectory(*it)) continue;
    const std::optional<int64_t> version = ParseVersionDirName(entry);
    if (!version.has_value()) {
      WarnOnce(
          it->path().string(),
          absl::StrCat(
              "model registry: skipping ", it->path().string(), ": ",
              Quote(entry),
              " is not a version (a positive integer without sign or leading "
              "zeros)"));
      continue;
    }
    versions.push_back(*version);
  }
  if (ec) {
    // Keep serving what we have; report once per outage of this directory.
    WarnOnce(absl::StrCat(model_dir, " unreadable"),
             absl::StrCat("model registry: cannot list ", model_dir, " (",
                          ec.message(), "); its served version stays loaded"));
    return;
  }
  warned_.erase(absl::StrCat(model_dir, " unreadable"));
  std::sort(versions.begin(), versions.end(), std::greater<>());

  int64_t served_version = 0;
  {
    ReaderMutexLock lock(&mu_);
    auto served = served_.find(name);
    if (served != served_.end()) served_version = served->second->version;
  }
  for (const int64_t version : versions) {
    // Never go back to an older version (and the served one is already loaded).
    if (version <= served_version) break;
    const std::string version_dir = absl::StrCat(model_dir, "/", version);
    std::shared_ptr<const LoadedModel> model;
    {
      ReaderMutexLock lock(&mu_);
      auto versions_of = loaded_.find(name);
      if (versions_of != loaded_.end()) {
        auto loaded = versions_of->second.find(version);
        if (loaded != versions_of->second.end())
          model = loaded->second;  // loaded on demand
      }
    }
    if (model == nullptr) {
      // Taken before reading, so a change during the read makes the next poll
      // retry.
      const std::string fingerprint = Fingerprint(version_dir);
      auto failed = failed_versions_.find(version_dir);
      if (failed != failed_versions_.end() && failed->second == fingerprint)
        continue;
      absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded =
          ReadModelVersion(options_.base_path, name, version);
      if (!loaded.ok()) {
        failed_versions_[version_dir] = fingerprint;
        if (absl::IsNotFound(loaded.status())) {
          LogWarning(absl::StrCat("model registry: ignoring ",
                                  loaded.status().message()));
        } else {
          LogError(absl::StrCat("model registry: skipping broken version: ",
                                loaded.status().message()));
        }
        continue;  // fall back to the next older version
      }
      failed_versions_.erase(version_dir);
      model = *std::move(loaded);
    }
    {
      MutexLock lock(&mu_);
      served_[name] = model;
      loaded_[name].emplace(version, model);
    }
    LogInfo(served_version == 0
                ? absl::StrCat("model registry: serving ", model->reference())
                : absl::StrCat("model registry: serving ", model->reference(),
                               " (was ", name, "@", served_version, ")"));
    return;
  }
}

std::shared_ptr<const LoadedModel> ModelManager::Get(
    std::string_view name) const {
  ReaderMutexLock lock(&mu_);
  auto it = served_.find(name);
  return it == served_.end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ModelManager::Get(
    std::string_view name, int64_t version) {
  METAOPT_RETURN_IF_ERROR(ValidateModelName(name));
  if (version <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("model version: ", version, " is not a positive integer"));
  }
  {
    ReaderMutexLock lock(&mu_);
    auto versions_of = loaded_.find(name);
    if (versions_of != loaded_.end()) {
      auto it = versions_of->second.find(version);
      if (it != versions_of->second.end()) return it->second;
    }
  }
  const std::string version_dir =
      absl::StrCat(options_.base_path, "/", ToAbsl(name), "/", version);
  std::error_code ec;
  if (!fs::is_directory(version_dir, ec)) {
    return absl::NotFoundError(absl::StrCat("model ", Quote(ToAbsl(name)),
                                            " has no version ", version,
                                            " in the registry"));
  }
  // Loaded without holding mu_; if another thread loads the same version
  // meanwhile, the first one stored wins, so every caller sees the same object.
  METAOPT_ASSIGN_OR_RETURN(std::shared_ptr<const LoadedModel> model,
                           ReadModelVersion(options_.base_path, name, version));
  MutexLock lock(&mu_);
  auto [it, inserted] =
      loaded_[std::string(name)].emplace(version, std::move(model));
  if (inserted)
    LogInfo(absl::StrCat("model registry: loaded ", it->second->reference()));
  return it->second;
}

absl::StatusOr<std::shared_ptr<const LoadedModel>> ModelManager::Resolve(
    const ModelReference& reference) {
  if (reference.version != 0) return Get(reference.name, reference.version);
  METAOPT_RETURN_IF_ERROR(ValidateModelName(reference.name));
  std::shared_ptr<const LoadedModel> model = Get(reference.name);
  if (model == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("model ", Quote(reference.name),
                     " is not served (no loadable version in the registry)"));
  }
  return model;
}

std::vector<std::shared_ptr<const LoadedModel>> ModelManager::List() const {
  ReaderMutexLock lock(&mu_);
  std::vector<std::shared_ptr<const LoadedModel>> models;
  models.reserve(served_.size());
  for (const auto& [name, model] : served_) models.push_back(model);
  return models;
}

}  // namespace metaopt::registry
