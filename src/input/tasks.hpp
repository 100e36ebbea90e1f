// The tasks `attntrace train` learns: two built in, drawn from a seed, and a learner's own
// examples read from a JSON Lines file.
#pragma once

#include "core/training.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The built-in tasks' names, in the order --help lists them.
std::vector<std::string> built_in_tasks();

// A built-in task: `count` examples drawn from `seed`, the last `held_out` of them held out.
//  who_did_it: "the teacher who was teaching a difficult concept to the students smiled" and
//    sentences like it, with 1 to 32 words between the subject and the last word, its verb;
//    the verb's query should put its weight on the subject. The lecture's sentence is the
//    example the report follows (never trained on).
//  recall: pairs "c=7" (a key and its value) among fillers "·", then a query "c?"; the
//    query should put its weight on the pair with its key, 1 to 32 tokens back.
// Throws UsageError for a name that is none of them.
TrainingSet built_in_task(std::string_view name, std::uint64_t seed, std::size_t count, std::size_t held_out);

// who_did_it with every verb `gap` words after its subject (the same words and vectors).
TrainingSet who_did_it_at_gap(std::uint64_t seed, std::size_t count, std::size_t held_out, std::size_t gap);
// The words who_did_it's subjects are drawn from, in a fixed order.
std::vector<std::string> who_did_it_subjects();

// A learner's examples, one JSON object a line (blank lines skipped): "tokens", "embeddings"
// (a row per token) and "focus": {"query": Q, "key": K} (a token as spelled, once in the line,
// or a 1-based position) or "target" (a row per token). The last `held_out` lines are held
// out. Throws DataError "ORIGIN:LINE: …" at the first line at fault.
TrainingSet read_task_lines(std::string_view text, const std::string& origin, double held_out_fraction);

}  // namespace attntrace
