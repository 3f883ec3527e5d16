# Small helpers so every target is declared the same way.
#
# farm_cc_library(NAME SRCS ... DEPS ...): a static library rooted at the repository top,
#   so code includes "farm/fabric/fabric.h". DEPS are PUBLIC: a layer states what it
#   builds on, and a layering violation fails to link.
# farm_proto_library(NAME PROTOS ...): C++ for protobuf files, included by their path
#   from the repository top ("farm/msg/session.pb.h").
# farm_cc_test(NAME SRCS ... DEPS ... [LABELS ...] [TIMEOUT s] [NO_MAIN]): a GoogleTest
#   binary registered with ctest, one ctest entry per binary.

function(farm_cc_library NAME)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_library(${NAME} STATIC ${ARG_SRCS})
  target_include_directories(${NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${NAME} PUBLIC ${ARG_DEPS})
endfunction()

function(farm_proto_library NAME)
  cmake_parse_arguments(ARG "" "" "PROTOS" ${ARGN})
  add_library(${NAME} STATIC)
  protobuf_generate(TARGET ${NAME} LANGUAGE cpp APPEND_PATH PROTOS ${ARG_PROTOS})
  target_include_directories(${NAME} PUBLIC ${PROJECT_BINARY_DIR})
  target_link_libraries(${NAME} PUBLIC protobuf::libprotobuf)
  # Generated code is not held to our warning flags.
  target_compile_options(${NAME} PRIVATE -Wno-error)
endfunction()

# farm_cc_binary(NAME SRCS ... DEPS ...): a program; every one parses its command line
#   with farm/base/command_line.h, so it links farm_command_line.
function(farm_cc_binary NAME)
  cmake_parse_arguments(ARG "" "" "SRCS;DEPS" ${ARGN})
  add_executable(${NAME} ${ARG_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${NAME} PRIVATE ${ARG_DEPS} farm_command_line)
endfunction()

function(farm_cc_test NAME)
  cmake_parse_arguments(ARG "NO_MAIN" "TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${NAME} ${ARG_SRCS})
  target_include_directories(${NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  if(ARG_NO_MAIN)
    target_link_libraries(${NAME} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gmock)
  else()
    target_link_libraries(${NAME} PRIVATE ${ARG_DEPS} GTest::gtest_main GTest::gmock)
  endif()
  add_test(NAME ${NAME} COMMAND ${NAME})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  set_tests_properties(${NAME} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}")
  if(FARM_TSAN)
    set_tests_properties(${NAME} PROPERTIES ENVIRONMENT
      "TSAN_OPTIONS=suppressions=${PROJECT_SOURCE_DIR}/tests/tsan_suppressions.txt halt_on_error=1 second_deadlock_stack=1")
  endif()
endfunction()
