// read_time: one timed read of a JSON input by attntrace's own reader, phase by phase.
// A measurement for docs/performance.md ("Reading JSON: our parser and simdjson On-Demand");
// not part of the CMake build or of ctest. It links the core library of a built tree:
//
//   B=build   # a Release build of this tree (Unity or not); libattntrace_core.a is in it
//   F="-O3 -DNDEBUG -std=c++20 -fopenmp -DEIGEN_DONT_PARALLELIZE -DEIGEN_MAX_ALIGN_BYTES=64 -DFMT_SHARED"
//   nice -n 19 g++ $F -Isrc -isystem /usr/include/eigen3 tests/perf/read_time.cpp
//       $B/libattntrace_core.a -lfmt -lutf8proc -lz -o /tmp/read_time      (one command line)
//   /tmp/read_time INPUT.json            phases, as load_problem runs them (one line of key=value)
//   /tmp/read_time INPUT.json --whole    load_input alone, the front door the command line calls
//
// One process is one run, as a command line run is: the caller repeats and interleaves runs.
// Times: wall (steady_clock) and CPU (getrusage RUSAGE_SELF, user + system, all threads) for
// each phase; the file is mapped by read_input (its pages fault in during the parse).
#include "core/problem.hpp"
#include "input/arrays.hpp"
#include "input/document.hpp"
#include "input/json_text.hpp"
#include "input/load.hpp"
#include "input/reader.hpp"
#include "input/source.hpp"
#include "util/memory.hpp"

#include "read_timing.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <variant>

namespace {

using perf::Clock;
using perf::print;
using perf::hash_bits;

// What the walk produced, so that no phase can be optimised away and both programs can be
// compared: token count, a checksum of the tokens' lengths and of every number (read_timing.hpp).
void summary(const attntrace::Problem& problem) {
    const auto& single = std::get<attntrace::SingleSequenceInput>(problem.input);
    std::uint64_t h = hash_bits(single.sequence.vectors, 0xCBF29CE484222325ULL);
    if (single.weights) h = hash_bits(single.weights->value, hash_bits(single.weights->key, hash_bits(single.weights->query, h)));
    std::printf(" hash=%016llx", static_cast<unsigned long long>(h));
    double sum = single.sequence.vectors.sum();
    std::size_t chars = 0;
    for (const auto& t : single.sequence.tokens) chars += t.size();
    if (single.weights) sum += single.weights->query.sum() + single.weights->key.sum() + single.weights->value.sum();
    std::printf(" tokens=%zu token_chars=%zu rows=%ld cols=%ld sum=%.9g desc=%zu mode=%d", single.sequence.tokens.size(),
                chars, static_cast<long>(single.sequence.vectors.rows()), static_cast<long>(single.sequence.vectors.cols()),
                sum, problem.description.any.size(), problem.mode ? static_cast<int>(*problem.mode) : -1);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: read_time INPUT.json [--whole]\n");
        return 2;
    }
    const bool whole = argc > 2 && std::strcmp(argv[2], "--whole") == 0;
    try {
        const attntrace::MemoryLimit limit = attntrace::default_memory_limit();
        const Clock t0 = Clock::now();
        const attntrace::InputText input = attntrace::read_input(argv[1]);
        const Clock t1 = Clock::now();
        std::printf("reader=attntrace%s bytes=%zu", whole ? "-whole" : "", input.text.size());
        if (whole) {
            const attntrace::Problem problem = attntrace::load_input(input, limit);
            const Clock t2 = Clock::now();
            print("open", t0, t1);
            print("load", t1, t2);
            print("total", t0, t2);
            summary(problem);
        } else {
            // load_problem's steps (src/input/load.cpp), each timed; the document is freed
            // inside the last phase, where load_problem frees it.
            attntrace::MemoryBudget budget(limit, input.origin);
            attntrace::Problem problem;
            Clock t2, t3;
            {
                attntrace::Reader in(input.origin, &budget);
                attntrace::Json doc = attntrace::parse_json(input.text, input.origin, &budget);
                t2 = Clock::now();
                attntrace::unpack_objects(in, doc);
                attntrace::ArrayNames arrays;
                std::vector<std::string> notes;
                attntrace::resolve_array_references(doc, input.origin, {}, arrays, notes, &budget);
                in.set_arrays(&arrays);
                problem = attntrace::read_document(in, doc, input.origin, std::nullopt, false);
                t3 = Clock::now();
            }
            input.require_unchanged();
            const Clock t4 = Clock::now();
            print("open", t0, t1);
            print("parse", t1, t2);
            print("document", t2, t3);
            print("free", t3, t4);
            print("total", t0, t4);
            summary(problem);
        }
        rusage u{};
        getrusage(RUSAGE_SELF, &u);
        std::printf(" maxrss_mib=%.1f\n", static_cast<double>(u.ru_maxrss) / 1024.0);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "read_time: %s\n", e.what());
        return 1;
    }
}
