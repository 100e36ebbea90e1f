// What --backward, --step-size and the gradients' names in -s and --svg-stage ask of the
// trace command (commands/backward_run.hpp does it).
#pragma once

#include "core/gradients.hpp"

#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// --backward LOSS as given: "focus:QUERY=KEY", "target:FILE" or "sum".
struct LossText {
    LossKind kind = LossKind::sum;
    std::string query, key;  // focus: a token as spelled or a 1-based position, each
    std::string file;        // target
};

// The loss `text` names, or nothing with the reason in `error` (for the command line's
// validator: "is not a loss: … (did you mean focus?)").
std::optional<LossText> parse_loss(const std::string& text, std::string& error);

struct BackwardRequest {
    LossText loss;
    std::optional<double> step_size;   // --step-size η: one step of gradient descent
    std::vector<std::string> stages;   // the gradients -s names ("d_weights"), taken out of its list
    bool forward_shown = true;         // false when -s names gradients only
    bool gradients_shown = true;       // false when -s names forward stages only (the loss still shows)
    std::optional<std::string> svg_of; // --svg-stage d_NAME: the forward stage NAME whose gradient --svg draws
};

}  // namespace attntrace
