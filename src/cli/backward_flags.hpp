// The trace command's options of the backward pass: --backward LOSS and --step-size η (the
// gradients' names in -s and --svg-stage go through those options). Inline, as flags.hpp:
// cli/commands.cpp is the one translation unit that includes CLI11.
#pragma once

#include "cli/flags.hpp"
#include "commands/backward_request.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace attntrace {

struct BackwardFlags {
    std::string loss;       // --backward, as given
    std::string step_size;  // --step-size, as given

    void add_to(CLI::App& app) {
        auto* backward = describe(
            app.add_option("--backward", loss,
                           "the backward pass: the gradient of LOSS for every stage and parameter, from the loss back to "
                           "the inputs (docs/gradients.md); LOSS is sum (L = Σ of the context), focus:QUERY=KEY (L = −log "
                           "A[QUERY, KEY]: tokens or 1-based positions; with several heads --head's, default 1) or "
                           "target:FILE (L = ½‖Z − T‖², T from a JSON or .npy file of the context's shape, or the "
                           "output's with W_o); -s d_NAME shows a gradient alone")
                ->check(CLI::Validator(
                    [](std::string& text) -> std::string {
                        std::string error;
                        return parse_loss(text, error) ? std::string() : error;
                    },
                    "")),
            "Learning", "LOSS");
        describe(app.add_option("--step-size", step_size,
                                "with --backward: take one step of gradient descent, every parameter θ ← θ − η·dL/dθ, "
                                "and show the new weights, the loss before and after, and the trace after the step")
                     ->check(CLI::Validator(
                         [](std::string& text) -> std::string {
                             return positive_number(text) ? std::string()
                                                          : "expected a positive number such as 0.1, found " + text;
                         },
                         ""))
                     ->needs(backward),
                 "Learning", "η");
    }

    // Nothing without --backward.
    std::optional<BackwardRequest> apply() const {
        if (loss.empty()) return std::nullopt;
        BackwardRequest request;
        std::string error;
        request.loss = *parse_loss(loss, error);  // CLI11 has checked it
        if (!step_size.empty()) request.step_size = positive_number(step_size);
        return request;
    }
};

}  // namespace attntrace
