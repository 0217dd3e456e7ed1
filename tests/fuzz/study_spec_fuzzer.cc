// libFuzzer target: a serialized StudySpec; see fuzz_harness.h StudySpecBinary.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaopt::fuzz::StudySpecBinary(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
