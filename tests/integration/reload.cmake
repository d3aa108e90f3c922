# reload.cmake — the hot-reload suites as ctest tests; include()d from
# tests/CMakeLists.txt, where the target `luamcp` exists and LUAMCP_NODE
# (integration.cmake) and LUAMCP_ASAN_DIR (make test) may be set.
#
#   integration.reload               reload.test.mjs: what a client sees of a reload
#   integration.reload-hammer        reload-hammer.test.mjs: no answer lost or doubled
#                                    while the app is saved hundreds of times
#   asan.integration.reload[-hammer] the same against the ASan+UBSan build
#
#   ctest -R reload --output-on-failure
#
# They need node >= 20 and the npm packages of tests/package.json
# (npm ci --prefix tests). Both suites wait for events, not for time; under a
# slow wrapper set LUAMCP_TIMEOUT_SCALE (and LUAMCP_WRAP) in the environment
# of the ctest run, as for the other integration suites.

if(NOT LUAMCP_NODE)
  find_program(LUAMCP_NODE NAMES node nodejs)
endif()
if(NOT LUAMCP_NODE)
  message(STATUS "luamcp: node not found, reload tests not registered")
  return()
endif()

foreach(_suite reload reload-hammer reload-widgets)
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
