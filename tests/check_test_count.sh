#!/bin/sh
# Every test case of the binary runs as one ctest case: compares the two counts.
# Usage: tests/check_test_count.sh BUILD_DIR
set -eu
build=${1:-build}
spec=$(cat "$build/tests/test_spec.txt" 2>/dev/null || true)  # a selection the build makes (sanitizers)
held=$("$build/tests/attntrace_tests" ${spec:+"$spec"} --list-test-names-only | grep -c .)
registered=$(ctest --test-dir "$build" -N | sed -n 's/^Total Tests: //p')
if [ "$held" != "$registered" ]; then
  echo "check_test_count: the test binary holds $held test cases, ctest runs $registered" >&2
  exit 1
fi
echo "check_test_count: ctest runs all $held test cases"
