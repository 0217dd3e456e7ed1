# Sanitizer and fuzzing instrumentation for every target of the build (see docs/testing.md).
#
#   -DMETAOPT_SANITIZE=address,undefined   AddressSanitizer + UndefinedBehaviorSanitizer
#   -DMETAOPT_SANITIZE=thread              ThreadSanitizer
#   -DMETAOPT_FUZZ=ON                      libFuzzer targets in tests/fuzz (clang only); every
#                                          target gets coverage instrumentation
#
# Use a build directory of its own for each (scripts/sanitize.sh, scripts/fuzz.sh); the default
# build has neither.

set(METAOPT_SANITIZE "" CACHE STRING
    "Comma-separated -fsanitize= list for every target: address,undefined or thread (empty: none)")
option(METAOPT_FUZZ "Build the libFuzzer targets in tests/fuzz (clang only)" OFF)

if(METAOPT_SANITIZE)
  if(NOT METAOPT_SANITIZE MATCHES "^[a-z,]+$")
    message(FATAL_ERROR "METAOPT_SANITIZE=${METAOPT_SANITIZE}: expected a comma-separated list "
                        "such as address,undefined or thread")
  endif()
  if(METAOPT_SANITIZE MATCHES "thread" AND METAOPT_SANITIZE MATCHES "address")
    message(FATAL_ERROR "METAOPT_SANITIZE=${METAOPT_SANITIZE}: thread cannot be combined with address")
  endif()
  add_compile_options(-fsanitize=${METAOPT_SANITIZE} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${METAOPT_SANITIZE})
  # UBSan checks stay recoverable so that its suppressions file applies; scripts/sanitize.sh makes
  # every report fatal with UBSAN_OPTIONS=halt_on_error=1.
  message(STATUS "metaopt: sanitizers ${METAOPT_SANITIZE}")
endif()

if(METAOPT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "METAOPT_FUZZ=ON needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++ (Debian: clang, libclang-rt-14-dev)")
  endif()
  # Coverage feedback for the code under test; the fuzz targets link libFuzzer itself.
  add_compile_options(-fsanitize=fuzzer-no-link)
  message(STATUS "metaopt: libFuzzer targets in tests/fuzz")
endif()
