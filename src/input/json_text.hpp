// Parsing JSON text with errors a learner can act on: line:column for syntax, a JSON pointer
// and "expected …, found …" for content.
#pragma once

#include "input/limits.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <string_view>

namespace attntrace {

using Json = nlohmann::ordered_json;  // keeps the file's key order (vocabulary order)


// Parses `text` (strict RFC 8259); throws DataError "ORIGIN:LINE:COL: invalid JSON: …",
// "ORIGIN: empty input …", or for a duplicate key "ORIGIN: /pointer: duplicate key …".
// `origin` names the input in messages. An array holding only numbers (a vector) comes back
// packed, as a binary value of doubles; so does an array of such arrays all of one length (a
// matrix), as one binary value of its rows, one after the other, with the row length as its
// subtype. Neither costs a node per number.
Json parse_json(std::string_view text, const std::string& origin);

bool is_packed_numbers(const Json& value);          // a vector
bool is_packed_matrix(const Json& value);           // a matrix
std::size_t packed_size(const Json& value);         // how many numbers, in all
std::size_t packed_columns(const Json& value);      // a matrix's row length
std::size_t rows_of(const Json& value);             // an array's elements, or a matrix's rows
void copy_packed(const Json& value, double* out);   // all the numbers, in order

// "/embeddings" + "journey" → "/embeddings/journey" (RFC 6901 escaping of '~' and '/').
std::string pointer_child(std::string_view pointer, std::string_view key);
std::string pointer_child(std::string_view pointer, std::size_t index);
// The pointer as shown in messages: the root is "/" rather than "".
std::string show_pointer(std::string_view pointer);

// A short description of a JSON value for "found …": `string "abc"`, `array of 3`, `null`.
std::string describe(const Json& value);

// Printable, single-line form of arbitrary bytes for messages: control characters and
// invalid UTF-8 become \xNN, long text is cut with "…".
std::string printable(std::string_view text, std::size_t max_chars = 40);

}  // namespace attntrace
