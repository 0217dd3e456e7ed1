// libFuzzer target: a spec choice and a serialized Configuration; see
// fuzz_harness.h ConfigurationAgainstSpec.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "tests/fuzz/fuzz_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  metaopt::fuzz::ConfigurationAgainstSpec(
      std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
