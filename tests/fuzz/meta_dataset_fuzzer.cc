// libFuzzer target: a meta-dataset folder (files separated by %% lines); see
// fuzz_harness.h MetaDatasetFolder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaopt::fuzz::MetaDatasetFolder(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
