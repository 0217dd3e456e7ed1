# Helpers in the style of abseil's absl_cc_library / absl_cc_test.

# metaopt_cc_library(NAME n SRCS ... HDRS ... DEPS ...)
# Defines a static library target `metaopt_<n>` (alias metaopt::<n>).
function(metaopt_cc_library)
  cmake_parse_arguments(ARG "" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  set(target metaopt_${ARG_NAME})
  if(ARG_SRCS)
    add_library(${target} STATIC ${ARG_SRCS} ${ARG_HDRS})
    target_link_libraries(${target} PUBLIC ${ARG_DEPS})
    target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  else()
    add_library(${target} INTERFACE)
    target_link_libraries(${target} INTERFACE ${ARG_DEPS})
    target_include_directories(${target} INTERFACE ${PROJECT_SOURCE_DIR})
  endif()
  add_library(metaopt::${ARG_NAME} ALIAS ${target})
endfunction()

# metaopt_cc_test(NAME n SRCS ... DEPS ... [LABELS ...])
# One binary per test file; discovered by ctest (label defaults to "unit"). Binaries labelled
# "concurrency" (multi-threaded tests, run under ThreadSanitizer by scripts/sanitize.sh) are also
# built by the target metaopt_concurrency_tests.
function(metaopt_cc_test)
  if(NOT METAOPT_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SRCS;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  add_executable(${ARG_NAME} ${ARG_SRCS})
  target_link_libraries(${ARG_NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_include_directories(${ARG_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${ARG_NAME} TEST_LIST ${ARG_NAME}_TESTS DISCOVERY_TIMEOUT 60)
  # List-valued properties (several labels, two variables) are set from a file ctest includes after
  # the discovered tests: gtest_discover_tests(PROPERTIES) splits lists into separate arguments.
  set(properties_file ${CMAKE_CURRENT_BINARY_DIR}/${ARG_NAME}_properties.cmake)
  file(WRITE ${properties_file}
    "if(${ARG_NAME}_TESTS)\n"
    "  set_tests_properties(\${${ARG_NAME}_TESTS} PROPERTIES LABELS \"${ARG_LABELS}\"\n"
    "    ENVIRONMENT \"METAOPT_SOURCE_DIR=${PROJECT_SOURCE_DIR};METAOPT_BINARY_DIR=${PROJECT_BINARY_DIR}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${properties_file})
  if("concurrency" IN_LIST ARG_LABELS)
    if(NOT TARGET metaopt_concurrency_tests)
      add_custom_target(metaopt_concurrency_tests)
    endif()
    add_dependencies(metaopt_concurrency_tests ${ARG_NAME})
  endif()
endfunction()
