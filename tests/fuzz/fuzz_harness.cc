#include "tests/fuzz/fuzz_harness.h"

#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "core/meta_dataset/meta_dataset.h"
#include "tests/testutil/meta_dataset_folders.h"
#include "core/space/encoding.h"
#include "core/space/random.h"
#include "core/space/search_space.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "metaopt/v1/study.pb.h"
#include "tests/testutil/test_specs.h"

namespace metaopt::fuzz {
namespace {

using google::protobuf::util::MessageDifferencer;

// Aborts with `what` (and the message of `status`, if any) unless `ok`.
void Check(bool ok, absl::string_view what,
           const absl::Status& status = absl::OkStatus()) {
  if (ok) return;
  std::fprintf(stderr, "fuzz contract broken: %s%s%s\n",
               std::string(what).c_str(), status.ok() ? "" : ": ",
               status.ok() ? "" : status.ToString().c_str());
  std::fflush(stderr);
  std::abort();
}

// A rejection must carry one of the allowed codes and say something.
void CheckRejection(const absl::Status& status, absl::string_view what,
                    bool not_found_allowed = false) {
  Check(status.code() == absl::StatusCode::kInvalidArgument ||
            (not_found_allowed && status.code() == absl::StatusCode::kNotFound),
        absl::StrCat(what, ": unexpected status code"), status);
  Check(!status.message().empty(), absl::StrCat(what, ": empty message"),
        status);
}

// `config` validates against `space` and is its own canonical form.
void CheckCanonical(const space::SearchSpace& space,
                    const v1::Configuration& config, absl::string_view what) {
  absl::StatusOr<v1::Configuration> again =
      space.Canonicalize(config, "configuration");
  Check(again.ok(), absl::StrCat(what, " is not a valid configuration"),
        again.status());
  Check(MessageDifferencer::Equals(*again, config),
        absl::StrCat(what, " is not canonical: ", config.ShortDebugString(),
                     " canonicalizes to ", again->ShortDebugString()));
  Check(space::ConfigurationKey(*again) == space::ConfigurationKey(config),
        absl::StrCat(what, ": the key changed"));
}

// Encode/Decode/Neighbor of canonical `config` stay in the space.
void CheckEncoding(const space::SearchSpace& space,
                   const space::Encoder& encoder,
                   const v1::Configuration& config, space::Rng& rng) {
  const Eigen::VectorXd x = encoder.Encode(config);
  Check(x.size() == encoder.dimension(), "Encode: wrong dimension");
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    Check(std::isfinite(x[i]) && x[i] >= 0 && x[i] <= 1,
          absl::StrCat("Encode(", config.ShortDebugString(), ")[", i,
                       "] = ", x[i], " is outside [0, 1]"));
  }
  CheckCanonical(space, encoder.Decode(x), "Decode(Encode(configuration))");
  CheckCanonical(space, encoder.Neighbor(config, 0.2, rng),
                 "Neighbor(configuration)");
}

void CheckStudySpec(const v1::StudySpec& spec) {
  absl::StatusOr<v1::StudySpec> canonical =
      space::ValidateAndCanonicalizeStudySpec(spec);
  if (!canonical.ok()) {
    CheckRejection(canonical.status(), "ValidateAndCanonicalizeStudySpec");
    return;
  }
  absl::StatusOr<v1::StudySpec> again =
      space::ValidateAndCanonicalizeStudySpec(*canonical);
  Check(again.ok(), "a canonical spec is rejected", again.status());
  Check(MessageDifferencer::Equals(*again, *canonical),
        "a canonical spec is not its own canonical form");

  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(canonical->search_space());
  Check(space.ok(), "the space of an accepted spec is rejected",
        space.status());
  const space::Encoder encoder(*space);
  space::Rng rng(canonical->seed());
  for (int i = 0; i < 4; ++i) {
    const v1::Configuration sample = space->Sample(rng);
    CheckCanonical(*space, sample, "Sample()");
    CheckEncoding(*space, encoder, sample, rng);
  }
  for (int i = 0; i < canonical->candidates_size() && i < 16; ++i) {
    CheckEncoding(*space, encoder, canonical->candidates(i), rng);
  }
}

// Fixed specs for ConfigurationAgainstSpec besides the integration tests'
// pipeline space (index 0): every domain kind, degenerate and extreme bounds,
// names shared across stages.
constexpr const char* kSpecs[] = {
    R"pb(
      search_space {
        stages {
          name: "model"
          algorithms {
            name: "f"
            parameters {
              name: "x"
              float_domain { low: -5 high: 10 }
            }
            parameters {
              name: "fixed"
              float_domain { low: 2.5 high: 2.5 }
            }
            parameters {
              name: "layers"
              int_domain { low: 3 high: 3 }
            }
            parameters {
              name: "units"
              int_domain { low: 1 high: 4096 log: true }
            }
            parameters {
              name: "offset"
              int_domain { low: -10 high: 10 }
            }
            parameters {
              name: "activation"
              categorical_domain { values: "relu" values: "tanh" values: "elu" }
            }
          }
        }
      }
      objective { name: "loss" goal: GOAL_MINIMIZE }
      algorithm { kind: ALGORITHM_KIND_GP }
    )pb",
    R"pb(
      search_space {
        stages {
          name: "extreme"
          algorithms {
            name: "e"
            parameters {
              name: "wide"
              float_domain { low: -1e308 high: 1e308 }
            }
            parameters {
              name: "tiny"
              float_domain { low: 1e-300 high: 1e300 log: true }
            }
            parameters {
              name: "big"
              int_domain { low: -9007199254740992 high: 9007199254740992 }
            }
            parameters {
              name: "biglog"
              int_domain { low: 1 high: 9007199254740992 log: true }
            }
          }
        }
      }
      objective { goal: GOAL_MINIMIZE }
      algorithm { kind: ALGORITHM_KIND_RANDOM }
    )pb",
    R"pb(
      search_space {
        stages {
          name: "a"
          algorithms {
            name: "m"
            parameters {
              name: "p"
              float_domain { low: 0 high: 1 }
            }
          }
          algorithms {
            name: "n"
            parameters {
              name: "p"
              categorical_domain { values: "x" values: "y" }
            }
          }
        }
        stages {
          name: "b"
          algorithms {
            name: "m"
            parameters {
              name: "p"
              int_domain { low: 0 high: 1 }
            }
          }
        }
        stages {
          name: "c"
          algorithms { name: "only" }
        }
      }
      objective { name: "y" goal: GOAL_MAXIMIZE }
      algorithm { kind: ALGORITHM_KIND_MOSAIC }
    )pb",
};

// PipelineSpec() and the spaces of kSpecs, validated once.
const std::vector<space::SearchSpace>& FixedSpaces() {
  static const auto* spaces = [] {
    std::vector<v1::StudySpec> specs = {testing::PipelineSpec()};
    for (const char* text : kSpecs) {
      Check(google::protobuf::TextFormat::ParseFromString(
                text, &specs.emplace_back()),
            "a fixed spec does not parse");
    }
    auto* result = new std::vector<space::SearchSpace>();
    for (const v1::StudySpec& spec : specs) {
      absl::StatusOr<v1::StudySpec> canonical =
          space::ValidateAndCanonicalizeStudySpec(spec);
      Check(canonical.ok(), "a fixed spec is invalid", canonical.status());
      absl::StatusOr<space::SearchSpace> space =
          space::SearchSpace::Create(canonical->search_space());
      Check(space.ok(), "a fixed space is invalid", space.status());
      result->push_back(*std::move(space));
    }
    return result;
  }();
  return *spaces;
}

// A scratch folder for this process, removed at exit.
const std::string& ScratchDir() {
  static const std::string* dir = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(
        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/metaopt_fuzz_XXXXXX");
    Check(mkdtemp(pattern.data()) != nullptr, "mkdtemp failed");
    auto* path = new std::string(pattern);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(*dir, ignored);
    });
    return path;
  }();
  return *dir;
}

void WriteFile(const std::string& path, absl::string_view text) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  Check(f != nullptr, absl::StrCat("cannot write ", path));
  Check(std::fwrite(text.data(), 1, text.size(), f) == text.size(),
        absl::StrCat("short write to ", path));
  std::fclose(f);
}

// Writes the files present in `parts` (in kFolderFiles order) into `dir` and
// removes the others.
void WriteFolderParts(const std::string& dir,
                      const std::vector<absl::string_view>& parts) {
  static constexpr const char* kFolderFiles[] = {
      "space.json", "tasks.csv", "evaluations.csv", "metafeatures.csv"};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (size_t i = 0; i < std::size(kFolderFiles); ++i) {
    const std::string path = absl::StrCat(dir, "/", kFolderFiles[i]);
    if (i < parts.size()) {
      WriteFile(path, parts[i]);
    } else {
      std::filesystem::remove(path, ec);
    }
  }
}

// The two reads describe the same configurations and values (by key).
void CheckSameTasks(const meta::MetaDataset& a, const meta::MetaDataset& b,
                    absl::string_view what) {
  Check(a.tasks.size() == b.tasks.size(),
        absl::StrCat(what, ": task count differs"));
  for (size_t t = 0; t < a.tasks.size(); ++t) {
    const meta::Task& x = a.tasks[t];
    const meta::Task& y = b.tasks[t];
    Check(x.id == y.id && x.split == y.split &&
              x.configurations.size() == y.configurations.size(),
          absl::StrCat(what, ": task ", t, " differs"));
    for (size_t r = 0; r < x.configurations.size(); ++r) {
      Check(space::ConfigurationKey(x.configurations[r]) ==
                    space::ConfigurationKey(y.configurations[r]) &&
                x.y[r] == y.y[r],
            absl::StrCat(what, ": task ", x.id, " row ", r, " differs"));
    }
    Check(x.metafeatures == y.metafeatures,
          absl::StrCat(what, ": metafeatures of task ", x.id, " differ"));
  }
}

}  // namespace

void StudySpecBinary(std::string_view input) {
  v1::StudySpec spec;
  if (!spec.ParseFromArray(input.data(), static_cast<int>(input.size()))) {
    return;
  }
  CheckStudySpec(spec);
}

void StudySpecText(std::string_view input) {
  v1::StudySpec spec;
  google::protobuf::TextFormat::Parser parser;
  // Parse errors are expected and not interesting; keep them off stderr.
  class Silent : public google::protobuf::io::ErrorCollector {
    void AddError(int, int, const std::string&) override {}
  } silent;
  parser.RecordErrorsTo(&silent);
  if (!parser.ParseFromString(std::string(input), &spec)) return;
  CheckStudySpec(spec);
}

void ConfigurationAgainstSpec(std::string_view input) {
  if (input.empty()) return;
  const std::vector<space::SearchSpace>& spaces = FixedSpaces();
  const space::SearchSpace& space =
      spaces[static_cast<unsigned char>(input[0]) % spaces.size()];
  v1::Configuration config;
  if (!config.ParseFromArray(input.data() + 1,
                             static_cast<int>(input.size() - 1))) {
    return;
  }
  absl::StatusOr<v1::Configuration> canonical =
      space.Canonicalize(config, "configuration");
  if (!canonical.ok()) {
    CheckRejection(canonical.status(), "Canonicalize");
    Check(absl::StartsWith(canonical.status().message(), "configuration"),
          "a rejection does not name the configuration's path",
          canonical.status());
    return;
  }
  CheckCanonical(space, *canonical, "Canonicalize(configuration)");
  const space::Encoder encoder(space);
  space::Rng rng(input.size());
  CheckEncoding(space, encoder, *canonical, rng);
}

void MetaDatasetFolder(std::string_view input) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(input.data(), input.size()),
                     absl::ByString(absl::string_view(kFileSeparator.data(),
                                                      kFileSeparator.size())));
  if (parts.size() > 4) return;
  const std::string dir = absl::StrCat(ScratchDir(), "/input");
  WriteFolderParts(dir, parts);

  absl::StatusOr<meta::MetaDataset> full = meta::ReadMetaDataset(dir);
  if (!full.ok()) {
    CheckRejection(full.status(), "ReadMetaDataset",
                   /*not_found_allowed=*/true);
    return;
  }

  // Every configuration is canonical in a valid space, with a finite value.
  absl::StatusOr<space::SearchSpace> space =
      space::SearchSpace::Create(full->space, "space.json");
  Check(space.ok(), "ReadMetaDataset accepted an invalid search space",
        space.status());
  int64_t rows = 0;
  for (const meta::Task& task : full->tasks) {
    Check(task.configurations.size() == task.y.size(),
          absl::StrCat("task ", task.id, ": configurations and y differ"));
    Check(full->FindTask(task.id) == &task,
          absl::StrCat("task ", task.id, ": FindTask disagrees (duplicate?)"));
    for (size_t r = 0; r < task.configurations.size(); ++r) {
      CheckCanonical(*space, task.configurations[r],
                     absl::StrCat("task ", task.id, " row ", r));
      Check(std::isfinite(task.y[r]),
            absl::StrCat("task ", task.id, " row ", r, ": y is not finite"));
    }
    for (const auto& [name, value] : task.metafeatures) {
      Check(std::isfinite(value),
            absl::StrCat("task ", task.id, ": metafeature ", name,
                         " is not finite"));
    }
    rows += static_cast<int64_t>(task.configurations.size());
  }
  Check(rows <= full->num_evaluation_rows,
        "more configurations than evaluation rows");

  // A read of one split, one row per task, is the matching part of the full
  // read.
  meta::ReadOptions options;
  options.splits = {"train"};
  options.max_rows_per_task = 1;
  absl::StatusOr<meta::MetaDataset> part = meta::ReadMetaDataset(dir, options);
  Check(part.ok(), "a filtered read of an accepted folder fails",
        part.status());
  meta::MetaDataset expected = *full;
  expected.tasks.clear();
  for (const meta::Task& task : full->tasks) {
    if (task.split != "train") continue;
    meta::Task& kept = expected.tasks.emplace_back(task);
    if (kept.configurations.size() > 1) {
      kept.configurations.resize(1);
      kept.y.resize(1);
    }
  }
  CheckSameTasks(expected, *part, "filtered read");

  // Rendering and reading again gives the same data.
  absl::StatusOr<meta::FolderText> text = meta::RenderMetaDataset(*full);
  Check(text.ok(), "RenderMetaDataset fails on a read meta-dataset",
        text.status());
  const std::string round_trip_dir = absl::StrCat(ScratchDir(), "/rendered");
  Check(meta::WriteFolder(*text, round_trip_dir).ok(), "WriteFolder failed");
  absl::StatusOr<meta::MetaDataset> again =
      meta::ReadMetaDataset(round_trip_dir);
  Check(again.ok(), "a rendered meta-dataset is rejected", again.status());
  CheckSameTasks(*full, *again, "rendered and read again");
}

}  // namespace metaopt::fuzz
