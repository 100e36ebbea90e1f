// Which keys a query may see: the causal mask (nothing after the query), a sliding window
// (--window W: only the W nearest keys) and padding (tokens that stand for nothing), alone or
// together, with the reason for each hidden pair; and the ways of applying a mask a learner
// meets besides the right one (a finite fill, or zeroing after softmax).
#pragma once

#include "core/matrix.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// Why a key is hidden from a query, as bits: a pair can be hidden for several reasons.
enum MaskReason : std::uint8_t { reason_causal = 1, reason_window = 2, reason_padding = 4 };

struct MaskSpec {
    bool causal = false;
    std::optional<Eigen::Index> window;  // keys j with i − W < j ≤ i (causal) or |i − j| < W
    std::vector<bool> padding;           // per token: a padding token, never attended to (empty: none)

    bool any() const;
};

struct Mask {
    BoolMatrix allowed;    // may query i attend to key j
    ReasonMatrix reasons;  // the MaskReason bits of each hidden pair, 0 where allowed
};

// The mask of n tokens, or nothing when `spec` hides nothing.
std::optional<Mask> build_mask(const MaskSpec& spec, Eigen::Index n);

// What a run with padding tokens says about them (none without): no query attends to them
// (or, `leaked` > 0, a finite --mask-fill still gives them up to that weight), and their own
// rows are computed (up to the scores only when `undivided`: --normalize sum could not divide
// them) but stand for nothing.
std::optional<std::string> padding_note(const MaskSpec& spec, const std::vector<std::string>& tokens, double leaked = 0,
                                        bool undivided = false);

// "causal", "window", "padding" or several joined by "+": the reasons a pair is hidden.
std::string reason_text(std::uint8_t reasons);

// The masked stage's title and formula, naming each mask in play.
std::string mask_title(const MaskSpec& spec);
// `fill`: what hidden scores become ("−∞", or the number of --mask-fill).
std::string mask_formula(const MaskSpec& spec, std::string_view scores_name, std::string_view fill);

// How a mask is applied. The right way puts −∞ before softmax; the others are what learners
// meet in other code, traced so their effect can be seen: a finite fill (−1e9, the type's
// lowest number) lets a masked key keep a little weight whenever the fill does not drown it,
// and gives a row with every key masked equal weights on the hidden keys; zeroing after softmax
// without dividing again leaves rows that no longer sum to 1.
struct MaskMethod {
    enum class Fill { minus_infinity, lowest, value } fill = Fill::minus_infinity;
    double value = 0;             // the finite fill of Fill::value
    bool after_softmax = false;   // zero the hidden weights after softmax, without renormalising

    bool standard() const { return fill == Fill::minus_infinity && !after_softmax; }
};

}  // namespace attntrace
