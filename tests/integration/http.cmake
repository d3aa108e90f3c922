# http.cmake — the Streamable HTTP suites (http-sdk.test.mjs, http-raw.test.mjs)
# as ctest tests; include()d from tests/CMakeLists.txt, where the target
# `luamcp` exists and LUAMCP_NODE / LUAMCP_ASAN_DIR may be set.
#
#   ctest -R integration.http --output-on-failure
#
# Each test starts its own `luamcp serve --http` on a free 127.0.0.1 port.
# They need node >= 20 and the npm packages of tests/package.json
# (npm ci --prefix tests). With LUAMCP_ASAN_DIR (make test sets it), the
# same suites also run against the sanitizer build, with timeouts x3.

if(NOT LUAMCP_NODE)
  find_program(LUAMCP_NODE NAMES node nodejs)
endif()
if(NOT LUAMCP_NODE)
  message(STATUS "luamcp: node not found, HTTP integration tests not registered")
  return()
endif()

foreach(_suite http-sdk http-raw)
  add_test(NAME integration.${_suite}
           COMMAND ${LUAMCP_NODE} --test --test-reporter=spec
                   ${CMAKE_CURRENT_LIST_DIR}/${_suite}.test.mjs
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(integration.${_suite} PROPERTIES
    ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
    TIMEOUT 180
    LABELS integration)

  if(LUAMCP_ASAN_DIR)
    add_test(NAME asan.integration.${_suite}
             COMMAND ${LUAMCP_NODE} --test --test-reporter=spec
                     ${CMAKE_CURRENT_LIST_DIR}/${_suite}.test.mjs
             WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
    set_tests_properties(asan.integration.${_suite} PROPERTIES
      ENVIRONMENT "LUAMCP_BIN=${LUAMCP_ASAN_DIR}/luamcp;LUAMCP_TIMEOUT_SCALE=3"
      TIMEOUT 300
      LABELS asan)
  endif()
endforeach()
unset(_suite)
