// The document parse_json returns (json_text.hpp): nlohmann's ordered_json, with vectors,
// matrices, tables of word vectors and arrays of strings in packed forms of their own (a binary
// value each, no node per number), and the JSON pointers and descriptions messages use.
#pragma once

#include "util/utf8.hpp"  // printable(), for the users of this header

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

using Json = nlohmann::ordered_json;  // keeps the file's key order (vocabulary order)

// The subtype bit that marks a packed object of word vectors (the rest is the vector length);
// a packed matrix's subtype is its row length alone.
inline constexpr std::uint64_t words_flag = std::uint64_t{1} << 63;
// The subtype of a packed array of strings.
inline constexpr std::uint64_t strings_flag = std::uint64_t{1} << 62;
// The subtype bit of float32 rows left where a binary array has them (a mapped file): the
// value holds their address and row count, the rest of the subtype is the row length.
inline constexpr std::uint64_t float_rows_flag = std::uint64_t{1} << 61;


bool is_packed_numbers(const Json& value);          // a vector
// The packed forms built from numbers read elsewhere (a binary array): what the parser makes
// of `count` finite numbers as a vector, or of `rows` rows of `columns` as a matrix.
Json packed_vector(const double* numbers, std::size_t count);
Json packed_matrix(const double* numbers, std::size_t rows, std::size_t columns);
// What the parser makes of an array of strings (none holding a NUL).
Json packed_string_array(const std::vector<std::string>& strings);
bool is_packed_matrix(const Json& value);           // a matrix
// Rows of float32 numbers kept where they are (valid while the array's storage lives): no
// number is copied. Only a binary array's embeddings come this way (LoadOptions).
struct FloatRows {
    const float* data = nullptr;
    std::size_t rows = 0, columns = 0;
};
Json packed_float_rows(FloatRows rows);
bool is_packed_float_rows(const Json& value);
FloatRows packed_float_rows_of(const Json& value);
bool is_packed_words(const Json& value);            // an object of word vectors
bool is_packed_strings(const Json& value);          // an array of strings

// A packed object of word vectors, read in place (valid while its Json lives).
struct PackedWords {
    std::size_t count = 0;  // words
    std::size_t width = 0;  // numbers per vector
    std::string_view word(std::size_t i) const;
    void copy_row(std::size_t i, double* out) const;  // the vector of word i

    const std::uint8_t* rows = nullptr;
    const std::uint8_t* ends = nullptr;
    const char* keys = nullptr;
};
PackedWords packed_words(const Json& value);
// The same object as an ordinary one, each member a packed vector: for an object that is
// not a table of words but was packed because its members are all vectors of one length.
Json unpack_words(const Json& value);

// A packed array of strings (tokens), read in place (valid while its Json lives).
struct PackedStrings {
    std::size_t count = 0;
    std::string_view operator[](std::size_t i) const;

    const std::uint8_t* ends = nullptr;
    const char* text = nullptr;
};
PackedStrings packed_strings(const Json& value);
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

}  // namespace attntrace
