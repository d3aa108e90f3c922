# dev.cmake — the developer page (web/dev.html, `serve --http … --dev`) in
# headless Chromium, as a ctest test; include()d from tests/CMakeLists.txt,
# where the target `luamcp` exists:
#
#   include(${CMAKE_CURRENT_SOURCE_DIR}/browser/dev.cmake)
#   ctest -R browser.dev --output-on-failure
#
# browser.dev   copies the repository's app to a temp dir, serves it with --dev,
#               drives /dev (a form, a result, the gift board widget, a script
#               added while the page is open), screenshots in tests/out/dev*.png,
#               then SIGTERM and exit 0. Skipped (exit 77) when /usr/bin/chromium
#               (Debian's chromium) or tests/node_modules/playwright-core is missing.
#
# The file runs under node:test directly (not `node --test`, which would turn
# the skip's exit 77 into a failure); `node --test tests/browser/dev.test.mjs`
# works too, and reports a skip as a skipped test.

if(NOT LUAMCP_NODE)
  find_program(LUAMCP_NODE NAMES node nodejs)
endif()
if(NOT LUAMCP_NODE)
  message(STATUS "luamcp: node not found, browser.dev not registered")
  return()
endif()

add_test(NAME browser.dev
         COMMAND ${LUAMCP_NODE} --test-reporter=spec ${CMAKE_CURRENT_LIST_DIR}/dev.test.mjs
         WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
set_tests_properties(browser.dev PROPERTIES
  ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
  SKIP_RETURN_CODE 77
  TIMEOUT 180
  LABELS "browser;integration")
