// libFuzzer target: a text-format StudySpec; see fuzz_harness.h StudySpecText.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaopt::fuzz::StudySpecText(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
