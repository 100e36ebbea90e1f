// What `attntrace train` learns from and what it hands on: a task's examples (a sentence's
// vectors and what the layer should do with them) and the note a learned model carries, so that
// every trace of it says where its weights came from. Plain data.
#pragma once

#include "core/matrix.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attntrace {

// One example: its tokens, a row vector per token, and one of two wishes.
//  focus:  query row `query` should put its weight on key `key` (L = −log A[query, key]);
//  target: the context vectors should be `target` (L = ½‖Z − T‖², a row per token).
struct TrainingExample {
    std::vector<std::string> tokens;
    Matrix inputs;  // tokens.size() × d_in
    struct Focus {
        Eigen::Index query = 0, key = 0;  // 0-based
    };
    std::optional<Focus> focus;
    std::optional<Matrix> target;
};

// A task: its examples, split once into those trained on and those held out, and the example
// whose focus weight the report follows (the lecture's sentence for who_did_it).
struct TrainingSet {
    std::string task;         // "who_did_it", "recall", or the file's name
    std::string description;  // one sentence: what the layer must learn
    std::vector<TrainingExample> train, held_out;
    std::optional<TrainingExample> shown;  // a focus example, followed over the steps
    Eigen::Index d_in = 0;
    Eigen::Index target_width = 0;  // d_v the targets ask for (0: no target example)
};

// The sentence a saved model holds (its tokens and vectors): the followed example, else the
// first trained on. The model file, its arrays and the report's hint for tracing them agree on it.
inline const TrainingExample& saved_example(const TrainingSet& set) { return set.shown ? *set.shown : set.train.front(); }

// Where a model's weights came from when attntrace train learned them: written into the model
// it saves ("learned" in the input) and said by every trace of that model.
struct Learned {
    std::string task;
    std::string optimizer;  // "adam", "sgd"
    double lr = 0;
    std::int64_t steps = 0;
    std::uint64_t seed = 0;
    double final_loss = 0;  // the mean loss over the training examples after the last step
};

}  // namespace attntrace
