# validate.cmake — unit tests for core/schema/validate.c; include()d from tests/CMakeLists.txt.

add_executable(test_validate ${CMAKE_CURRENT_LIST_DIR}/test_validate.c)
target_link_libraries(test_validate PRIVATE luamcp_core)
add_test(NAME unit.validate COMMAND test_validate)

# The official JSON-Schema-Test-Suite, from Debian's json-schema-test-suite
# (draft7 is its newest draft; no Debian or npm package carries the
# 2019-09/2020-12 directories), plus our own 2020-12 cases in the same
# format. The files listed are the ones we claim: each passes in full, but
# for the cases skipped by name in schema_suite.c; schema_suite.md says
# which files are not claimed, and why.
add_executable(schema_suite ${CMAKE_CURRENT_LIST_DIR}/schema_suite.c)
target_link_libraries(schema_suite PRIVATE luamcp_core)
set(LUAMCP_SCHEMA_SUITE_DIR /usr/share/json-schema-test-suite/tests/draft7
    CACHE PATH "JSON-Schema-Test-Suite draft7 directory")
set(_validate_draft7_claimed
  additionalItems.json additionalProperties.json allOf.json anyOf.json
  boolean_schema.json const.json contains.json default.json dependencies.json
  enum.json exclusiveMaximum.json exclusiveMinimum.json if-then-else.json items.json
  maxItems.json maxLength.json maxProperties.json maximum.json
  minItems.json minLength.json minProperties.json minimum.json
  multipleOf.json not.json oneOf.json pattern.json patternProperties.json
  properties.json propertyNames.json ref.json
  required.json type.json uniqueItems.json
  optional/bignum.json optional/zeroTerminatedFloats.json)
# format is an annotation by default: these run with format asserted
set(_validate_draft7_format_claimed
  optional/ecmascript-regex.json
  optional/format/date-time.json optional/format/date.json optional/format/email.json
  optional/format/hostname.json optional/format/ipv4.json optional/format/ipv6.json
  optional/format/json-pointer.json optional/format/regex.json
  optional/format/relative-json-pointer.json optional/format/time.json
  optional/format/uri-reference.json optional/format/uri.json)
set(_validate_ours defs.json items-rest.json prefixItems.json ref-2020.json
    applicators-2020.json unevaluated-2020.json anchor-2020.json pattern-ecma.json)
set(_validate_ours_format format-2020.json)
set(_validate_suite_args)
if(EXISTS ${LUAMCP_SCHEMA_SUITE_DIR}/type.json)
  list(APPEND _validate_suite_args
       --dialect draft-07 --dir ${LUAMCP_SCHEMA_SUITE_DIR} ${_validate_draft7_claimed}
       --format assert ${_validate_draft7_format_claimed} --format annotate)
else()
  message(WARNING "JSON-Schema-Test-Suite not found at ${LUAMCP_SCHEMA_SUITE_DIR} "
                  "(apt install json-schema-test-suite): unit.schema_suite runs our cases only")
endif()
list(APPEND _validate_suite_args
     --dialect none --dir ${CMAKE_CURRENT_LIST_DIR}/schema-2020-12 ${_validate_ours}
     --format assert ${_validate_ours_format})
add_test(NAME unit.schema_suite COMMAND schema_suite ${_validate_suite_args})

# Bounded work (issue 15): exponential anyOf/oneOf/allOf, quadratic
# uniqueItems, the step budget and deadline. It takes milliseconds; on code
# without the memo and hashing its cases take hours, hence the TIMEOUT.
add_executable(test_validate_limits ${CMAKE_CURRENT_LIST_DIR}/test_validate_limits.c)
target_link_libraries(test_validate_limits PRIVATE luamcp_core)
add_test(NAME unit.validate_limits COMMAND test_validate_limits)
set_tests_properties(unit.validate_limits PROPERTIES TIMEOUT 60)
