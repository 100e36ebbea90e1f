// Instruction sets. The default (portable) build compiles the hot files, kernels.cpp and
// streaming.cpp, twice: once for any x86-64 CPU and once for AVX2 with FMA, each copy in a
// namespace of its own (isa_baseline, isa_avx2), and dispatch.cpp gives their functions
// their public names, choosing the copy once per run from what the CPU supports. A function
// attribute (target_clones) could not do this: Eigen chooses its vector instructions with
// the preprocessor (__AVX2__), so only a second compilation of the whole file gives its
// products the wider registers. CMakeLists.txt makes everything else the AVX2 copy holds
// (Eigen's code, the standard library's) private to it, so no AVX2 instruction can reach
// the baseline's code. A build with ATTNTRACE_NATIVE=ON compiles one copy for its machine.
#pragma once

#include <string>

#ifndef ATTNTRACE_ISA
#define ATTNTRACE_ISA isa_baseline
#endif

namespace attntrace {

// The instruction set of the kernels this run uses: "avx2" or "baseline". The environment
// variable ATTNTRACE_KERNELS=baseline chooses the baseline copy on any CPU (for comparing
// the two; docs/performance.md).
const char* kernel_isa();

// The same in a sentence, for --version: which copy runs, and why.
std::string kernel_description();

}  // namespace attntrace
