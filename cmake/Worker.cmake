# Helpers shared by every folder of the build.
include(GoogleTest)

# Add every direct subfolder of DIR that has a CMakeLists.txt (plugins/, tests/unit/ ...):
# a new plugin is a new folder and nothing else.
function(worker_add_subdirs dir)
  file(GLOB children RELATIVE ${dir} ${dir}/*)
  list(SORT children)
  foreach(child ${children})
    if(IS_DIRECTORY ${dir}/${child} AND EXISTS ${dir}/${child}/CMakeLists.txt)
      add_subdirectory(${dir}/${child})
    endif()
  endforeach()
endfunction()

# worker_add_plugin(NAME SOURCES a.cpp b.cu LIBS extra...)
# Builds a loadable module NAME.so into <build>/plugins/.
function(worker_add_plugin name)
  cmake_parse_arguments(P "" "" "SOURCES;LIBS" ${ARGN})
  add_library(${name} MODULE ${P_SOURCES})
  set_target_properties(${name} PROPERTIES PREFIX "" OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${WORKER_PLUGIN_OUTPUT_DIR}
    CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE worker_sdk ${P_LIBS})
  target_link_options(${name} PRIVATE -Wl,--no-undefined)
endfunction()

# worker_add_test(NAME SOURCES ... LIBS ... [GPU])
# A GoogleTest executable in <build>/tests-bin/, its cases registered with ctest at test time.
# GPU tests get the label `gpu` (excluded in CI) and must GTEST_SKIP() without a device.
# Tests find fixtures through the env var WORKER_FIXTURES_DIR, defaulting to tests/fixtures, and the
# large tokenizer assets (unpacked from tests/fixtures/tokenizers.tar.xz at configure time) through
# WORKER_TOKENIZER_FIXTURES_DIR.
function(worker_add_test name)
  cmake_parse_arguments(T "GPU" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${WORKER_TEST_OUTPUT_DIR})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gmock GTest::gtest_main Threads::Threads)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/tests/support) # run_command.hpp
  target_compile_definitions(${name} PRIVATE
    WORKER_FIXTURES_DIR_DEFAULT="${WORKER_FIXTURES_DIR}"
    WORKER_PLUGIN_DIR_DEFAULT="${WORKER_PLUGIN_OUTPUT_DIR}"
    WORKER_BUILD_DIR="${CMAKE_BINARY_DIR}"
    WORKER_TOKENIZER_FIXTURES_DIR_DEFAULT="${WORKER_TOKENIZER_FIXTURES_DIR}")
  if(T_GPU)
    set(labels gpu)
  else()
    set(labels cpu)
  endif()
  gtest_discover_tests(${name} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels}" ENVIRONMENT "WORKER_FIXTURES_DIR=${WORKER_FIXTURES_DIR};WORKER_TOKENIZER_FIXTURES_DIR=${WORKER_TOKENIZER_FIXTURES_DIR}")
endfunction()
