#!/bin/sh
# Every test case of the binary runs as one ctest case: compares the two counts.
# Usage: tests/check_test_count.sh BUILD_DIR
set -eu
build=${1:-build}
spec=$(cat "$build/tests/test_spec.txt" 2>/dev/null || true)  # a selection the build makes (sanitizers)
list=$(cat "$build/tests/list_names.txt")  # the options that list names (Catch2 v2 and v3 differ)
# shellcheck disable=SC2086
held=$("$build/tests/attntrace_tests" ${spec:+"$spec"} $list | grep -c .)
registered=$(ctest --test-dir "$build" -N | sed -n 's/^Total Tests: //p')
if [ "$held" != "$registered" ]; then
  echo "check_test_count: the test binary holds $held test cases, ctest runs $registered" >&2
  exit 1
fi
echo "check_test_count: ctest runs all $held test cases"
