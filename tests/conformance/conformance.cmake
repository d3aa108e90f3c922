# conformance.cmake — the official MCP conformance suite as the ctest test
# `conformance`; include()d from tests/CMakeLists.txt, where the target
# `luamcp` exists:
#
#   include(${CMAKE_CURRENT_SOURCE_DIR}/conformance/conformance.cmake)
#   ctest -R conformance --output-on-failure
#
# run.sh serves tests/conformance/app with `luamcp serve --http` on a free
# 127.0.0.1 port and runs every server scenario of the pinned suite against
# it; it needs `npm ci --prefix tests` (the suite and a Node 22). It passes
# only with no failed and no warning check (see run.sh).

get_filename_component(_luamcp_repo_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
add_test(NAME conformance
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/run.sh
         WORKING_DIRECTORY ${_luamcp_repo_root})
set_tests_properties(conformance PROPERTIES
  ENVIRONMENT "LUAMCP_BIN=$<TARGET_FILE:luamcp>"
  TIMEOUT 180
  LABELS conformance)
unset(_luamcp_repo_root)
