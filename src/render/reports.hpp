// What the `similarity` and `compare` commands show in the text formats, laid out once for
// all of them: a title, a few lines of context, matrices (as stages) and closing lines. The
// table, markdown and CSV renderers each render a Report in their own way.
#pragma once

#include "attention/compare.hpp"
#include "attention/similarity.hpp"
#include "core/stage.hpp"
#include "render/render.hpp"

#include <string>
#include <vector>

namespace attntrace {

struct Report {
    std::string title;
    std::vector<std::string> preamble;
    std::vector<Stage> tables;
    std::vector<std::string> footer;
};

// "self mode", "bahdanau mode (dot score)", "causal mode · RoPE positions": the mode as the
// headings name it, with the position information when the run has some.
std::string mode_text(const RunHeader& run);
// "12 tokens", "5 source → 6 target tokens": how many tokens a trace has, as its headings say.
std::string tokens_text(const Trace& trace);
// "attntrace · self mode · 12 tokens · d_in = 4, … · softmax · example:teacher_smiled": the first
// line of a trace, as the table and the page write it.
std::string trace_title(const Trace& trace);
// How scores became weights: "softmax", "softmax at T = 0.5" or "sum", followed by
// " · scores ÷ 8" or " · scores unscaled" when --scale changed the mode's own scaling.
std::string weighting_text(const RunHeader& run);

// The parameters section of the text formats: which matrices and where they came from
// ("W_q, W_k, W_v · generated from seed 123 (splitmix64)"), or why there are none; and each
// matrix as a table to print.
std::string parameters_heading(const Trace& trace);
Stage parameter_table(const Parameter& parameter);

// "all 4 checks passed" (", with 1 warning"): --check's last line.
std::string check_verdict(const CheckReport& report);

Report similarity_report(const Similarity& similarity, int digits);
// attntrace rnn's tables and sentences (render/rnn_report.cpp).
Report rnn_text_report(const RnnReport& report);
Report comparison_report(const Comparison& comparison, int digits);
// The decode: its heading (with --explain's reasons), one report per step shown, and the
// summary (the cost of the steps and the bytes of the cache). render/decode_report.cpp.
std::vector<Report> decode_reports(const Decode& decode, const RenderOptions& options);
// --explain's reasons for a decode: why Q is not cached, why K and V are (as this run
// computes them), why only causal.
std::vector<std::string> decode_explanation(const Decode& decode);

// A format that shows similarity and comparisons as a Report (table, markdown, CSV): it
// renders the report, the rest is done here.
class TextRenderer : public Renderer,
                     public ShowsTrace,
                     public ShowsSummary,
                     public ShowsSimilarity,
                     public ShowsComparison,
                     public ShowsCheck,
                     public ShowsDecode {
public:
    void similarity(const Similarity& similarity, const RenderOptions& options, std::ostream& out) const final {
        report(similarity_report(similarity, options.digits), options, out);
    }
    void comparison(const Comparison& comparison, const RenderOptions& options, std::ostream& out) const final {
        report(comparison_report(comparison, options.digits), options, out);
    }
    // The reports one after another, an empty line between them.
    void decode(const Decode& decode, const RenderOptions& options, std::ostream& out) const override {
        bool first = true;
        for (const Report& r : decode_reports(decode, options)) {
            if (!first) out << '\n';
            first = false;
            report(r, options, out);
        }
    }

protected:
    virtual void report(const Report& report, const RenderOptions& options, std::ostream& out) const = 0;

    // A cell of `digits` decimals held as a string (sign, integer part, point, decimals): 32
    // bytes, and a heap block beyond 15 characters.
    static double cell_string_bytes(int digits) {
        const double length = digits + 8;
        return 32 + (length > 15 ? length + 17 : 0);
    }
    // A pair of similarity's words: both tables' numbers in the result and in the report, and
    // each cell's text (measured: 107 bytes a pair in table, markdown and CSV).
    static double similarity_pair_bytes(int digits) { return 2 * (2 * 8 + 8 + cell_string_bytes(digits)) + 16; }
};

}  // namespace attntrace
