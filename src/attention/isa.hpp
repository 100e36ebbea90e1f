// Instruction sets. The default (portable) build compiles the hot files, projections.cpp and
// streaming.cpp (the kernels attention/hot_functions.hpp lists), three times: for any x86-64
// CPU, for AVX2 with FMA, and for AVX-512 (F, DQ, BW, VL), each copy in a namespace of its own (isa_baseline, isa_avx2, isa_avx512), and
// dispatch.cpp gives their functions their public names, choosing the widest copy the CPU
// runs, once per run. A function attribute (target_clones) could not do this: Eigen chooses
// its vector instructions with the preprocessor (__AVX2__, __AVX512F__), so only another
// compilation of the whole file gives its products the wider registers. CMakeLists.txt makes
// everything else a copy holds (Eigen's code, the standard library's) private to it, so no
// AVX instruction can reach the baseline's code. A build with ATTNTRACE_NATIVE=ON compiles
// one copy for its machine.
#pragma once

#include <string>

#ifndef ATTNTRACE_ISA
#define ATTNTRACE_ISA isa_baseline
#endif

namespace attntrace {

// The instruction set of the kernels this run uses: "avx512", "avx2" or "baseline". The
// environment variable ATTNTRACE_KERNELS=baseline or =avx2 caps the choice (for comparing the
// copies; docs/performance.md).
const char* kernel_isa();

// The same in a sentence, for --version: which copy runs, and why.
std::string kernel_description();

}  // namespace attntrace
