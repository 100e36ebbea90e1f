// Parsing JSON text with errors a learner can act on: line:column for syntax, with the likely
// mistake (json_hints.hpp), a JSON pointer and "expected …, found …" for content.
#pragma once

#include "input/json_document.hpp"
#include "input/limits.hpp"
#include "util/memory.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

namespace attntrace {

// Parses `text` (strict RFC 8259); throws DataError "ORIGIN:LINE:COL: invalid JSON: …",
// "ORIGIN: empty input …", or for a duplicate key "ORIGIN: /pointer: duplicate key …".
// `origin` names the input in messages. An array holding only numbers (a vector) comes back
// packed, as a binary value of doubles; so does an array of such arrays all of one length (a
// matrix), as one binary value of its rows, one after the other, with the row length as its
// subtype. Neither costs a node per number.
// An object all of whose members are vectors of one length (an embeddings object) is packed
// too: its keys in file order and its vectors as rows, with no node per key or number; and
// so is an array of strings (tokens): one block of text and where each string ends.
// `budget`, when given, is charged for the document as it is built (MemoryBudget).
Json parse_json(std::string_view text, const std::string& origin, MemoryBudget* budget = nullptr);

// The 1-based line and column (in characters) of byte `offset` of `text`, as parse_json's
// errors give them ("FILE:LINE:COLUMN: …"), for other readers of text.
std::pair<std::size_t, std::size_t> line_and_column(std::string_view text, std::size_t offset);

}  // namespace attntrace
