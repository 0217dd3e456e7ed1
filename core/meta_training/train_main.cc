#include "core/meta_training/train_main.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/meta_training/deeppipe_train.h"
#include "core/meta_training/fsbo_train.h"
#include "core/meta_training/grosi_train.h"
#include "core/meta_training/metabu_train.h"
#include "core/meta_training/output_head_train.h"
#include "core/meta_training/pmf_train.h"
#include "core/meta_training/portfolio_train.h"
#include "core/meta_training/train_common.h"

namespace metaopt::train {

// The kind table: one entry per model kind built into metaopt-train.
std::vector<TrainerKind> BuiltinTrainerKinds() {
  return {
      PortfolioTrainerKind(),
      PmfTrainerKind(),
      DeepPipeTrainerKind(),
      MetabuTrainerKind(),
      GrosiTrainerKind(),
      FsboTrainerKind(),
      OutputHeadTrainerKind(),
  };
}

namespace {

std::string KindHelp(const std::vector<TrainerKind>& kinds) {
  std::string help = "model kind:";
  for (const std::string& name : KnownKinds()) {
    std::string description = "not available in this build";
    for (const TrainerKind& kind : kinds) {
      if (kind.name == name) description = kind.description;
    }
    absl::StrAppend(&help, "\n  ", name, ": ", description);
  }
  return help;
}

// The value of --kind on the command line ("--kind x" or "--kind=x"), or "".
std::string KindArgument(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--kind" && i + 1 < argc) return argv[i + 1];
    if (arg.rfind("--kind=", 0) == 0) return arg.substr(7);
  }
  return "";
}

}  // namespace

int MetaoptTrainMain(int argc, const char* const* argv, std::ostream& out,
                     std::ostream& err) {
  // Kinds may declare flags of the same name (--epochs): CLI11 gives the
  // value to the first option group that declares it, so the kind named by
  // --kind registers its flags first.
  std::vector<TrainerKind> kinds = BuiltinTrainerKinds();
  const std::string selected = KindArgument(argc, argv);
  std::stable_partition(
      kinds.begin(), kinds.end(),
      [&](const TrainerKind& kind) { return kind.name == selected; });
  CommonTrainOptions options;
  CLI::App app{
      "metaopt-train: meta-train a model on the train split of a meta-dataset "
      "folder and publish it as a new version of a model registry"};
  app.set_version_flag("--version", MetaoptVersion());
  app.add_option("--kind", options.kind, KindHelp(kinds))
      ->required()
      ->check(CLI::IsMember(KnownKinds()));
  app.add_option("--data", options.data_dir,
                 "meta-dataset folder (space.json, evaluations.csv, tasks.csv)")
      ->required();
  app.add_option("--registry", options.registry_dir,
                 "model registry directory (created if needed); the model is "
                 "written to <registry>/<name>/<next version>/")
      ->required();
  app.add_option("--name", options.name,
                 "model name (default: <data folder name>-<kind>)");
  app.add_option("--seed", options.seed, "random seed")->capture_default_str();
  CLI::Option* size =
      app.add_option(
             "--size", options.portfolio_size,
             "size K of the warm-start portfolio (fsbo: 5, the paper's I)")
          ->capture_default_str()
          ->check(CLI::Range(1, 100000));
  app.add_option("--split-train", options.split_train, "split to train on")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test", "holdout", "all"}));
  app.add_option("--split-valid", options.split_valid,
                 "split for validation metrics (none: no validation)")
      ->capture_default_str()
      ->check(CLI::IsMember({"train", "valid", "test", "holdout", "none"}));
  app.add_option("--exclude-algorithm", options.exclude_algorithms,
                 "STAGE/ALGORITHM to leave out of training (repeatable): "
                 "removed from the model's space, its rows dropped")
      ->allow_extra_args(false);
  app.add_option("--feature-names", options.feature_names_file,
                 "FILE of meta-feature names, one per line: train on these "
                 "only (e.g. those metaopt.metafeatures computes: "
                 "scripts/metafeature_coverage.py --client-names)");
  app.add_flag("--quiet", options.quiet, "no progress lines on stderr");

  std::map<std::string, Trainer> trainers;
  std::map<std::string, CLI::App*> groups;
  for (const TrainerKind& kind : kinds) {
    CLI::App* group =
        app.add_option_group(absl::StrCat("--kind ", kind.name),
                             absl::StrCat("flags of --kind ", kind.name));
    trainers[kind.name] = kind.add_flags(*group);
    groups[kind.name] = group;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err);
  }

  if (trainers.count(options.kind) == 0) {
    std::vector<std::string> built_in;
    for (const TrainerKind& kind : kinds) built_in.push_back(kind.name);
    err << "metaopt-train: --kind " << options.kind
        << " is not available in this build (built-in kinds: "
        << absl::StrJoin(built_in, ", ") << ")" << std::endl;
    return 2;
  }
  for (const auto& [name, group] : groups) {
    if (name == options.kind) continue;
    for (const CLI::Option* option : group->get_options()) {
      if (option->count() > 0) {
        err << "metaopt-train: " << option->get_name()
            << " is a flag of --kind " << name << ", not of --kind "
            << options.kind << std::endl;
        return 2;
      }
    }
  }

  for (const TrainerKind& kind : kinds) {
    if (kind.name == options.kind && kind.default_portfolio_size > 0 &&
        size->count() == 0) {
      options.portfolio_size = kind.default_portfolio_size;
    }
  }
  options.command_line = JoinCommandLine(argc, argv);
  Progress progress(options.quiet ? nullptr : &err);
  absl::StatusOr<TrainResult> result =
      RunTraining(options, trainers[options.kind], progress);
  if (!result.ok()) {
    err << "metaopt-train: error: " << result.status().message() << std::endl;
    return 1;
  }
  out << DescribeTrainResult(*result);
  return 0;
}

}  // namespace metaopt::train
