// The metaopt-train command line, as a function so tests can run it in-process.
//
//   metaopt-train --kind portfolio --data $METAOPT_DATA/oboe --registry models
//       [--name oboe-portfolio] [--size 16] [--seed 0]
//       [--split-train train] [--split-valid valid|none] [--quiet]
//       [kind flags, e.g. --match auto|exact|nearest]
#ifndef METAOPT_CORE_META_TRAINING_TRAIN_MAIN_H_
#define METAOPT_CORE_META_TRAINING_TRAIN_MAIN_H_

#include <ostream>

namespace metaopt::train {

// Parses the command line, trains the selected kind (BuiltinTrainerKinds) and
// publishes a new registry version; prints progress to `err` and what it wrote
// to `out`. Returns the process exit code: 0 on success (and for --help /
// --version), CLI11's code for a malformed command line, 2 for a kind not
// built in or flags of another kind, 1 when reading, training or writing
// fails. Errors are one line on `err` starting with "metaopt-train: ".
int MetaoptTrainMain(int argc, const char* const* argv, std::ostream& out,
                     std::ostream& err);

}  // namespace metaopt::train

#endif  // METAOPT_CORE_META_TRAINING_TRAIN_MAIN_H_
