// Generation with a KV cache (`attntrace decode`). A causal model makes one token at a time:
// at step i it projects only the new token x_i into q_i, k_i, v_i, appends k_i and v_i to the
// cache of the keys and values of tokens 1 … i − 1, and attends with q_i to the whole cache.
// Each step is computed here in plain loops from x_i and the trace's W_q, W_k, W_v, and then
// measured against row i of the full causal trace, which computed every row at once.
#pragma once

#include "core/stage.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

struct DecodeOptions {
    std::int64_t prefill = 1;             // tokens 1 … P go in at once; the steps are P + 1 … n
    std::optional<std::int64_t> step;     // show this position's step alone
    std::optional<std::int64_t> context;  // the context length of the bytes table (default: n)
};

// One key/value head's cache: the keys and values of every token, a row per token in the
// order the steps appended them (the cache at step i is rows 0 … i − 1).
struct KvCache {
    int kv_head = 0;  // 1-based; 0 with one head
    Matrix keys;      // n × d_head
    Matrix values;    // n × d_v
};

// One query head at one step.
struct DecodeHead {
    int head = 0;     // 1-based; 0 with one head
    int kv_head = 0;  // the key/value head whose cache it reads (0 with one head)
    std::vector<double> q;
    std::vector<double> scores;   // q · k_j for every cached token j
    std::vector<double> scaled;   // ÷ the divisor; −∞ where hidden (padding)
    std::vector<double> weights;  // softmax of scaled / T over the cache
    std::vector<double> context;  // Σ_j weight_j · v_j
};

struct DecodeStep {
    std::int64_t position = 0;  // 1-based: the new token's
    std::string token;
    std::vector<double> x;
    std::vector<DecodeHead> heads;
    std::int64_t cache_tokens = 0;   // after appending: the position
    std::int64_t cache_numbers = 0;  // cache_tokens · H_kv · (d_head + d_v)
    std::int64_t cache_bytes = 0;
    // Largest |difference| from row `position` of the full causal trace, over q, k, v, the
    // scores, the scaled scores, the weights and the context of every head.
    double max_difference = 0;
    bool matches_full_trace = false;  // within `Decode::tolerance` of the magnitude
};

// What the keys and values of one token take, for one way of sharing key/value heads.
struct KvFootprint {
    std::string layout;  // "multi-head", "grouped-query", "multi-query"
    int kv_heads = 0;
    std::int64_t numbers_per_token = 0;  // 2 · layers · H_kv · d_head when d_v = d_head
    std::int64_t bytes_per_token = 0;
    std::int64_t bytes = 0;              // for `Decode::context_tokens` tokens
    bool this_run = false;
};

struct Decode : RunHeader {
    std::vector<std::string> tokens;
    std::int64_t prefill = 1;
    std::int64_t d_head = 0, d_v = 0;
    // What a step projects: the token's vector, or after ln_1 (--from gpt2) its normalised
    // vector LN(x); and which of the biases b_q, b_k, b_v the projections add.
    bool layernorm = false;
    bool bias_q = false, bias_k = false, bias_v = false;
    int bytes_per_number = 8;
    std::vector<KvCache> caches;  // one per key/value head, after the last step
    double prefill_difference = 0;  // the prefill's keys and values against the trace's
    std::vector<DecodeStep> steps;  // every step P + 1 … n, or the one --step asks for
    std::int64_t total_steps = 0;   // n − P, whatever is shown
    double tolerance = 0;           // relative: 1e-12 (float64) or 1e-5 (float32)
    bool exact = false;             // every step, and the prefill, equal to the last bit
    bool all_match = false;         // every step within the tolerance
    double max_difference = 0;      // the largest over every step and the prefill
    std::int64_t context_tokens = 0;
    std::vector<KvFootprint> footprint;
    // Dot products of queries with keys per head, over every step: with the cache (i at step i)
    // and recomputing the prefix's scores without one (an i × i product, i² at step i).
    std::int64_t dots_cached = 0, dots_recomputed = 0;
};

// Decodes the tokens of `full`, a causal trace of a single sequence with projections, step
// by step. Throws UsageError for a prefill or step outside the sequence.
Decode decode_steps(const Trace& full, const DecodeOptions& options);

// The bytes of the keys and values for `tokens` tokens: layers · H_kv · (d_head + d_v) ·
// bytes_per_number · tokens (with one layer, and 2 · H_kv · d_head · … when d_v = d_head).
std::int64_t kv_cache_bytes(int kv_heads, std::int64_t d_head, std::int64_t d_v, int bytes_per_number,
                            std::int64_t tokens, int layers = 1);

}  // namespace attntrace
