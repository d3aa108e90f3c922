# browser.cmake — MCP Apps tests as ctest tests; include()d from
# tests/CMakeLists.txt, where the target `luamcp` exists and LUAMCP_NODE
# (and LUAMCP_ASAN_DIR) may be set.
#
#   ctest -R 'browser|widgets' --output-on-failure
#
# browser.widget       the gift board and the test app's views in headless
#                      Chromium (Debian's chromium, /usr/bin/chromium), in a host
#                      built on ext-apps' AppBridge; screenshots in tests/out/browser/.
#                      Skipped (exit 77) when Chromium is missing.
# integration.widgets  MCP Apps on the wire over stdio, and `luamcp check` of widgets.
#
# Both need node >= 20 and the npm packages of tests/package.json (npm ci --prefix tests).

if(NOT LUAMCP_NODE)
  find_program(LUAMCP_NODE NAMES node nodejs)
endif()
if(NOT LUAMCP_NODE)
  message(STATUS "luamcp: node not found, widget tests not registered")
  return()
endif()

get_filename_component(_luamcp_tests_dir ${CMAKE_CURRENT_LIST_DIR} DIRECTORY)

add_test(NAME browser.widget
         COMMAND ${LUAMCP_NODE} ${CMAKE_CURRENT_LIST_DIR}/run.mjs
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(browser.widget PROPERTIES
  ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  LABELS "browser;integration")

add_test(NAME integration.widgets
         COMMAND ${LUAMCP_NODE} --test --test-reporter=spec
                 ${_luamcp_tests_dir}/integration/widgets.test.mjs
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(integration.widgets PROPERTIES
  ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
  TIMEOUT 120
  LABELS integration)

if(LUAMCP_ASAN_DIR)
  add_test(NAME asan.integration.widgets
           COMMAND ${LUAMCP_NODE} --test --test-reporter=spec
                   ${_luamcp_tests_dir}/integration/widgets.test.mjs
           WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
  set_tests_properties(asan.integration.widgets PROPERTIES
    ENVIRONMENT "LUAMCP_BIN=${LUAMCP_ASAN_DIR}/luamcp;LUAMCP_TIMEOUT_SCALE=3"
    TIMEOUT 300
    LABELS asan)
endif()
unset(_luamcp_tests_dir)

# a widget written against the official App class (ext-apps' app-with-deps, inlined)
add_test(NAME browser.appclass
         COMMAND ${LUAMCP_NODE} --test-reporter=spec ${CMAKE_CURRENT_LIST_DIR}/appclass.test.mjs
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(browser.appclass PROPERTIES
  ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
  SKIP_RETURN_CODE 77
  TIMEOUT 300
  LABELS "browser;integration")
