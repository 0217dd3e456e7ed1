// Fuzz harnesses shared by the libFuzzer targets (tests/fuzz/*_fuzzer.cc) and
// by fuzz_corpus_test, which replays the seed corpora and the regression inputs
// in every build. Each function takes one input of any bytes, runs the code
// under test on it and checks that code's contract; a broken contract prints
// what broke and aborts (a crash to libFuzzer, a failed test to GoogleTest).
// Thread-compatible: MetaDatasetFolder writes into a per-process scratch
// folder, so call the harnesses from one thread at a time.
#ifndef METAOPT_TESTS_FUZZ_FUZZ_HARNESS_H_
#define METAOPT_TESTS_FUZZ_FUZZ_HARNESS_H_

#include <string_view>

namespace metaopt::fuzz {

// `input` as a serialized StudySpec (skipped if it does not parse): runs
// ValidateAndCanonicalizeStudySpec. A rejection must be INVALID_ARGUMENT with a
// message; an accepted spec must be its own canonical form, and its space must
// sample, encode, decode and perturb configurations that validate again.
void StudySpecBinary(std::string_view input);

// The same with `input` as a text-format StudySpec.
void StudySpecText(std::string_view input);

// The first byte picks one of a few fixed, valid study specs (see
// fuzz_harness.cc); the rest is a serialized Configuration, canonicalized
// against that spec's space. A rejection must be INVALID_ARGUMENT naming the
// path "configuration..."; an accepted configuration must be canonical (a fixed
// point with a stable key) and encode into the unit cube.
void ConfigurationAgainstSpec(std::string_view input);

// `input` is a meta-dataset folder: the files space.json, tasks.csv,
// evaluations.csv and metafeatures.csv in this order, separated by lines "%%"
// (fewer parts: the later files are absent). Runs ReadMetaDataset on it. A
// rejection must be INVALID_ARGUMENT or NOT_FOUND with a message; an accepted
// folder must have a valid search space, canonical configurations aligned with
// finite objective values, agree with a split-filtered, row-limited read, and
// read back identically after RenderMetaDataset.
void MetaDatasetFolder(std::string_view input);

// The separator line of MetaDatasetFolder inputs.
inline constexpr std::string_view kFileSeparator = "%%\n";

}  // namespace metaopt::fuzz

#endif  // METAOPT_TESTS_FUZZ_FUZZ_HARNESS_H_
