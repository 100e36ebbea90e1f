// Field names learners try in place of ours ("W_q" for "query", "embedding" for
// "embeddings", "encoder" for "source") and where the field they mean is: the hints of the
// loader's "unknown field" messages, one table for each kind of object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

struct Alias {
    std::string name;   // in lower case: keys are compared case-insensitively
    std::string where;  // "the query projection W_q goes under \"query\""
};
using Aliases = std::vector<Alias>;

const Aliases& top_level_aliases();    // the input object
const Aliases& projection_aliases();   // "weights" of a single-sequence input
const Aliases& alignment_aliases();    // "weights" of a source/target input
const Aliases& source_aliases();       // "source"
const Aliases& target_aliases();       // "target"

// The alias `key` is, compared in lower case; nullptr when it is none.
const Alias* find_alias(const Aliases& aliases, std::string_view key);

}  // namespace attntrace
