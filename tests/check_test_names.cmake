# Run after the test binary is built: every test case must become exactly one ctest case.
# catch_discover_tests turns the list of names into a CMake list, so a ';' splits a name into
# pieces that match nothing; Catch's own filter syntax gives '"', '\', '*' and a leading '~'
# meanings of their own, and a name with a leading '-' reads as an option. A name with any of
# them fails the build here instead of passing unseen ("No tests ran" exits 0 in Catch2 v2
# without --warn NoTests).
# LIST_NAMES: the options that list the names alone (Catch2 v2 and v3 differ).
execute_process(COMMAND "${TEST_EXECUTABLE}" ${LIST_NAMES}
                OUTPUT_VARIABLE names RESULT_VARIABLE listed)
if(listed LESS 0 OR names STREQUAL "")
  message(FATAL_ERROR "cannot list the test cases of ${TEST_EXECUTABLE}")
endif()
string(FIND "${names}" ";" semicolon)
if(NOT semicolon EQUAL -1)
  string(REGEX MATCH "[^\n]*;[^\n]*" bad "${names}")
  message(FATAL_ERROR "test case name with ';', which ctest cannot run: \"${bad}\"")
endif()
string(REPLACE "\n" ";" names "${names}")
foreach(name IN LISTS names)
  if(name MATCHES "[\"\\\\*]" OR name MATCHES "^[~-]")
    message(FATAL_ERROR "test case name with a character Catch's command line treats specially (\", \\, *, a leading ~ or -): \"${name}\"")
  endif()
endforeach()
