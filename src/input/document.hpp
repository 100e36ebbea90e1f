// The document (a JSON input as parse_json returns it, or binary arrays put in the same form by
// arrays.cpp) read into a Problem: every field checked against every other, each error naming
// the input and the place (reader.hpp). After read_document returns, every shape is consistent.
#pragma once

#include "core/problem.hpp"
#include "input/reader.hpp"

#include <optional>
#include <string>

namespace attntrace {

// The parser packs every object whose members are all vectors of one length, as it should an
// embeddings object; the input object, "weights", "source" and "target" are read member by
// member, so such an object is unpacked again here ({"v_a": [1, 2]} is an object, not a
// table of words).
void unpack_objects(const Reader& in, Json& doc);

// The document, read. Where numbers came from binary arrays the reader knows
// (Reader::set_arrays); `layout` is --layout, `kv_heads_given` --kv-heads.
Problem read_document(Reader& in, Json& doc, const std::string& origin, const std::optional<WeightLayout>& layout,
                      bool kv_heads_given);

}  // namespace attntrace
