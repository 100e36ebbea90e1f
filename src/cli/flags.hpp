// Groups of options that several commands share, each added to a CLI11 command and turned
// into the request's fields after parsing. The lists of values come from the enum tables
// (core/types.hpp, render/render.hpp), never typed again here.
#pragma once

#include "attention/trace.hpp"
#include "render/render.hpp"
#include "util/memory.hpp"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace attntrace {

// A whole number in [0, 2⁶⁴): CLI11 would wrap "-1" and saturate "99999999999999999999".
extern const CLI::Validator whole_number_u64;

// -o FILE.
void add_output_path(CLI::App& app, std::optional<std::string>& path);

// `--name VALUE` for a value of enum E, checked against E's names (the default shown).
template <Named E>
CLI::Option* add_enum(CLI::App& app, const std::string& flags, std::string& value, const std::string& help) {
    return app.add_option(flags, value, help)->check(CLI::IsMember(enum_names<E>()));
}

// How output looks and where it goes: shared by every command that prints tables.
struct OutputFlags {
    std::string format = "table";
    std::string color = "auto";
    int width = -1;
    int digits = 4;
    std::optional<std::string> path;  // -o FILE

    void add_to(CLI::App& app);
    void apply(RenderOptions& render) const;
};

// What a command may take from the machine: shared by the commands that read inputs.
struct LimitFlags {
    std::string max_memory, max_input, max_time;

    void add_to(CLI::App& app, bool reads_input = true);
    MemoryLimit memory() const;
    std::uint64_t input() const;
    double seconds() const;
};

// How attention is computed: shared by the trace and compare commands.
struct TraceFlags {
    std::string mode, normalize = "softmax", score = "additive", dtype = "float64";
    long long dim = 0;
    int threads = 0;
    TraceOptions options;

    void add_to(CLI::App& app);
    std::optional<Mode> requested_mode() const;
    // The options, and the thread count set (prepare_threads).
    TraceOptions apply() const;
};

}  // namespace attntrace
