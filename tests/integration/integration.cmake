# integration.cmake — the node integration suites as ctest tests; include()d
# from tests/CMakeLists.txt, where the target `luamcp` exists.
#
#   ctest -R integration --output-on-failure
#
# They need node >= 20 and the npm packages of tests/package.json
# (npm ci --prefix tests). Under a slow wrapper, scale the limits, e.g.:
#   LUAMCP_WRAP="valgrind --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite -q" \
#   LUAMCP_TIMEOUT_SCALE=30 ctest -R integration
# (the environment of the ctest run reaches the tests; LUAMCP_TIMEOUT_SCALE
# set at configure time also scales the ctest TIMEOUT below).

find_program(LUAMCP_NODE NAMES node nodejs)
if(NOT LUAMCP_NODE)
  message(STATUS "luamcp: node not found, integration tests not registered")
  return()
endif()

set(LUAMCP_INTEGRATION_TIMEOUT 120 CACHE STRING
    "ctest TIMEOUT (seconds) of each integration suite, before LUAMCP_TIMEOUT_SCALE")
set(_luamcp_it_scale 1)
if(DEFINED ENV{LUAMCP_TIMEOUT_SCALE} AND "$ENV{LUAMCP_TIMEOUT_SCALE}" MATCHES "^[0-9]+$")
  set(_luamcp_it_scale $ENV{LUAMCP_TIMEOUT_SCALE})
endif()
math(EXPR _luamcp_it_timeout "${LUAMCP_INTEGRATION_TIMEOUT} * ${_luamcp_it_scale}")

foreach(_suite sdk raw cli)
  add_test(NAME integration.${_suite}
           COMMAND ${LUAMCP_NODE} --test --test-reporter=spec
                   ${CMAKE_CURRENT_LIST_DIR}/${_suite}.test.mjs
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.${_suite} PROPERTIES
    ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
    TIMEOUT ${_luamcp_it_timeout}
    LABELS integration)
endforeach()
unset(_suite)
unset(_luamcp_it_scale)
unset(_luamcp_it_timeout)
