#!/bin/sh
# A timing compiler launcher: runs the compiler (or linker) it is given under /usr/bin/time and
# appends one line per run to $TIMING_LOG (default /tmp/attntrace_compile_times.log):
#   user-seconds system-seconds wall-seconds peak-kB output-file start-time
# Used for docs/performance.md ("Build time: history and method"):
#   cmake -S . -B build-timing -DCMAKE_BUILD_TYPE=Release \
#     -DCMAKE_CXX_COMPILER_LAUNCHER="$PWD/tests/perf/time_compile.sh" \
#     -DCMAKE_CXX_LINKER_LAUNCHER="$PWD/tests/perf/time_compile.sh"
#   TIMING_LOG=/tmp/times.log cmake --build build-timing --target attntrace -j 2
#   sort -rn /tmp/times.log | awk '{printf "%6.1f %s\n", $1 + $2, $5}'
out=""
prev=""
for arg in "$@"; do
  [ "$prev" = "-o" ] && out="$arg"
  prev="$arg"
done
start=$(date +%s.%N)
exec /usr/bin/time -a -o "${TIMING_LOG:-/tmp/attntrace_compile_times.log}" -f "%U %S %e %M $out $start" "$@"
