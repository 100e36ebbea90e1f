// The product of `trace`: an ordered list of labelled matrices, one per step of the lecture
// pipeline (scores → scaling → masking → softmax → weighted sum). Renderers only format this.
#pragma once

#include "core/labels.hpp"
#include "core/matrix.hpp"
#include "core/types.hpp"
#include "core/worked.hpp"

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Every stage any product shows. The names are stable: --stage takes them and JSON consumers
// rely on them; code refers to stages by these values only, so a misspelt stage does not
// compile.
enum class StageId {
    inputs, queries, keys, values,                                               // single-sequence modes
    encoder_states, decoder_states, projected_decoder, projected_encoder,       // bahdanau
    scores, scaled, masked, weights, context,                                   // every mode
    dot, cosine,                                                                // similarity's tables
    parameters,  // the weights a run uses: a section of their own, not a stage of the trace
    positions, queries_rotated, keys_rotated,                                    // position information
    concat, output, head_contributions,                                          // several heads
    embeddings,  // sinusoidal positions: the embeddings before the encodings are added
    layernorm,   // --from gpt2: each token's vector normalised (ln_1) before the projections
    hidden_states, influence,  // attntrace rnn: the RNN's h_1 … h_n, and each token's reach
};

inline constexpr NameTable<StageId, 26> stage_names{{
    {StageId::inputs, "inputs"},
    {StageId::queries, "queries"},
    {StageId::keys, "keys"},
    {StageId::values, "values"},
    {StageId::encoder_states, "encoder_states"},
    {StageId::decoder_states, "decoder_states"},
    {StageId::projected_decoder, "projected_decoder"},
    {StageId::projected_encoder, "projected_encoder"},
    {StageId::scores, "scores"},
    {StageId::scaled, "scaled"},
    {StageId::masked, "masked"},
    {StageId::weights, "weights"},
    {StageId::context, "context"},
    {StageId::dot, "dot"},
    {StageId::cosine, "cosine"},
    {StageId::parameters, "parameters"},
    {StageId::positions, "positions"},
    {StageId::queries_rotated, "queries_rotated"},
    {StageId::keys_rotated, "keys_rotated"},
    {StageId::concat, "concat"},
    {StageId::output, "output"},
    {StageId::head_contributions, "head_contributions"},
    {StageId::embeddings, "embeddings"},
    {StageId::layernorm, "layernorm"},
    {StageId::hidden_states, "hidden_states"},
    {StageId::influence, "influence"},
}};
constexpr const auto& names_of(StageId) { return stage_names; }

// Which way a stage runs. A forward stage holds what the pipeline computed; a backward stage
// holds dL/d(that matrix) for a loss L (attention/backward.hpp): the same id, head, shape and
// labels as the forward stage it belongs to, so every consumer keeps one vocabulary.
enum class Direction { forward, backward };
inline constexpr NameTable<Direction, 2> direction_names{{{Direction::forward, "forward"}, {Direction::backward, "backward"}}};
constexpr const auto& names_of(Direction) { return direction_names; }

struct Stage {
    StageId id = StageId::inputs;
    // Several heads: the 1-based head a per-head stage belongs to (0: one stage for the run),
    // and the key/value head it reads (grouped-query attention; 0 when every head has its own).
    int head = 0;
    int kv_head = 0;
    Direction direction = Direction::forward;
    // A backward stage of a parameter (id `parameters`): the parameter's name ("W_q"); empty
    // for a stage of the pipeline.
    std::string parameter;
    std::string title;    // for people: "Attention weights"
    std::string formula;  // plain text: "S = Q·Kᵀ"
    bool applied = true;
    std::string reason;   // when !applied: one line saying why this mode skips the step
    Labels rows;  // row labels (queries, tokens)
    Labels cols;  // column labels (keys, or dimensions "x1", "x2", …)
    // The matrix as it stands after this stage (a skipped stage passes its input through).
    // A masked entry is −∞.
    Matrix data;
    std::optional<BoolMatrix> allowed;  // where a mask is in play: may row i use column j
    std::optional<ReasonMatrix> mask_reasons;  // the masked stage: why each hidden pair is hidden (attention/masks.hpp)
    std::optional<Vector> row_sums;     // weights: each row's sum, shown beside the table
    std::vector<Eigen::Index> strongest;  // weights: per row, the column of the largest weight (-1: all masked)
    std::vector<Eigen::Index> tied;       // weights: per row, how many keys share that largest weight
    // A quiz's question: the entries shown as "?" (with a row's sum and strongest key when any
    // entry of the row is hidden); absent everywhere else.
    std::optional<BoolMatrix> hidden;
    // A table whose rows are different quantities (decode's score, scaled score and weight of
    // each cached key): the stage each row belongs to, for shading it as that stage is shaded;
    // empty: every row is of this stage.
    std::vector<StageId> row_stages;

    std::string_view name() const { return to_string(id); }
    // What a backward stage is keyed by: its parameter's name, else the stage's name.
    std::string_view key() const { return parameter.empty() ? name() : std::string_view(parameter); }
    Eigen::Index row_count() const { return data.rows(); }
    Eigen::Index col_count() const { return data.cols(); }
    bool is_masked(Eigen::Index r, Eigen::Index c) const { return allowed && !(*allowed)(r, c); }
    bool is_hidden(Eigen::Index r, Eigen::Index c) const { return hidden && (*hidden)(r, c); }
    bool row_hidden(Eigen::Index r) const { return hidden && hidden->row(r).any(); }
};

// A learned matrix a run uses (W_q, W_a, …), as given in the input or generated: rows as in
// the input (d_in × d_k, the row-vector convention).
struct Parameter {
    std::string name;     // "W_q"
    std::string formula;  // where it is used: "Q = X·W_q"
    // The rows and columns are labelled "x1" … and "q1" …: the prefixes, the labels being made
    // only when a table shows them (a wide matrix has many).
    std::string row_prefix, col_prefix;
    Matrix data;         // one row for a vector
    bool vector = false;  // a vector in the input (v_a): one row labelled with the name
    bool generated = false;  // drawn from the seed though the input gives the others (W_o)
};

// What a run is: shared by the products that describe one (a trace, a summary) and written
// once by each format's heading.
struct RunHeader {
    Mode mode = Mode::plain;
    Normalization normalization = Normalization::softmax;
    Dtype dtype = Dtype::float64;
    Score score = Score::additive;  // bahdanau mode: how s and h are scored
    std::string origin;       // where the input came from
    std::string description;  // the input's one-line description
    WeightsOrigin weights = WeightsOrigin::none;
    std::uint64_t seed = 0;   // when weights are generated
    // Things the learner should know about this run that no single stage shows (one line each).
    std::vector<std::string> notes;
    Dims dims;                // ("d_in", 3), ("d_k", 2), …
    int heads = 1;     // attention heads
    int kv_heads = 1;  // key/value heads (grouped-query attention when fewer than heads)
    ScaleRule scale_rule = ScaleRule::none;  // what the scores are divided by
    double scale = 1;                        // that divisor (√d_k, 1 or the number given)
    double temperature = 1;                  // softmax(S / T)
    PositionScheme positions = PositionScheme::none;  // how token positions enter (--positions)
    std::int64_t first_position = 0;                  // the position of the first token (--position-offset)
    std::int64_t window = 0;         // --window: a query sees only this many keys (0: no window)
    std::optional<double> mask_fill;  // --mask-fill: the finite number hidden scores became (absent: −∞)
    bool mask_after_softmax = false;  // --mask-after-softmax: hidden weights zeroed after softmax, not renormalised
};

// Figures measured on a trace for --explain's statements about this run (attention/facts).
struct RunFacts {
    // The standard deviation of the visible scores, before and after scaling.
    double score_spread = 0, scaled_spread = 0;
    // Softmax against dividing by the row sum, on the rows whose visible scores are 0 or more
    // with a positive sum (the only rows where the division gives a distribution): in how many the top
    // weight is higher by softmax (at the run's temperature), lower, or the same.
    std::size_t compared_rows = 0, softmax_higher = 0, softmax_lower = 0;
    // The rows left out of that comparison, by why: a visible score below 0 (the division
    // gives no distribution), every visible score 0 (a sum of 0 cannot divide), no key seen.
    std::size_t negative_rows = 0, zero_rows = 0, blind_rows = 0;
    struct Row {
        std::string label;
        double by_softmax = 0, by_sum = 0;  // the row's largest weight each way
    };
    std::optional<Row> example;  // the first compared row where the two differ most
};

struct Trace : RunHeader {
    // Single-sequence modes: tokens. Bahdanau: source_tokens (columns) and target_tokens (rows).
    Labels tokens;
    Labels source_tokens;
    Labels target_tokens;
    std::vector<Stage> stages;
    std::vector<Parameter> parameters;    // the weights the run uses (none in plain mode)
    std::optional<WorkedExample> worked;  // --query: one row's arithmetic
    std::vector<RunFacts> facts;  // one per head (one with one head)
    double layernorm_epsilon = 0;  // ln_1's ε, when the trace has a layernorm stage (for the backward pass)
    // The facts of `head` (1-based; 0: the first).
    const RunFacts& facts_of(int head) const { return facts.at(head > 0 ? static_cast<std::size_t>(head - 1) : 0); }

    // The parameter called `name` ("W_q"); std::out_of_range when the run has none by that name.
    const Parameter& parameter(std::string_view name) const {
        for (const auto& p : parameters)
            if (p.name == name) return p;
        throw std::out_of_range("no parameter " + std::string(name));
    }
    bool has_parameter(std::string_view name) const {
        for (const auto& p : parameters)
            if (p.name == name) return true;
        return false;
    }
    // The stage `id` of `head` (0: the first stage of that id, whatever its head).
    const Stage* find(StageId id, int head = 0) const {
        for (const auto& stage : stages)
            if (stage.id == id && (head == 0 || stage.head == head)) return &stage;
        return nullptr;
    }
    // A stage every trace of this mode has (its absence is a bug, not a data error).
    const Stage& at(StageId id, int head = 0) const;
};

inline const Stage& Trace::at(StageId id, int head) const {
    if (const Stage* stage = find(id, head)) return *stage;
    throw std::logic_error("a trace without its " + std::string(to_string(id)) + " stage");
}

}  // namespace attntrace
