// Reading the values of a document (JSON text, or binary arrays put in the same form) with
// messages that say where: the input's name, the JSON pointer of the value or the binary array
// its numbers came from, what was expected and what was found. Used by document.cpp and
// sequence.cpp, which read a Problem out of the document.
#pragma once

#include "core/error.hpp"
#include "core/matrix.hpp"
#include "core/types.hpp"
#include "input/aliases.hpp"
#include "input/arrays.hpp"
#include "input/json_text.hpp"
#include "input/limits.hpp"
#include "util/memory.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

// The items with `separator` between them: "a, b, c".
std::string join(const std::vector<std::string>& items, std::string_view separator);

// Where we are while reading: the input's name, for every message, and how a value's place is
// shown (its JSON pointer, or the binary array its numbers came from).
class Reader {
public:
    Reader(std::string origin, MemoryBudget* budget) : origin_(std::move(origin)), budget_(budget) {}

    // Where numbers came from binary arrays (messages name the array; a square weight from one
    // needs a stated layout), and the layout the weight matrices are stored in.
    void set_arrays(const ArrayNames* arrays) { arrays_ = arrays; }
    void set_layout(WeightLayout layout, bool stated) {
        layout_ = layout;
        layout_stated_ = stated;
    }

    // Counts what the problem being built holds against --max-memory (MemoryBudget).
    void charge(std::uint64_t bytes) const {
        if (budget_) budget_->charge(bytes);
    }

    [[noreturn]] void fail(std::string_view pointer, const std::string& message) const {
        throw DataError(fmt::format("{}: {}: {}", origin_, place(pointer), message));
    }

    // The binary array at `pointer` (or holding it), when the numbers there came from one.
    const std::string* array_at(std::string_view pointer) const {
        if (!arrays_) return nullptr;
        for (const auto& [at, name] : *arrays_)
            if (pointer.starts_with(at) && (pointer.size() == at.size() || pointer[at.size()] == '/')) return &name;
        return nullptr;
    }

    // A JSON pointer as messages show it, or the array the numbers there came from.
    std::string place(std::string_view pointer) const {
        if (const std::string* name = array_at(pointer)) return *name;
        return show_pointer(pointer);
    }

    const Json& require_object(const Json& value, std::string_view pointer) const {
        if (!value.is_object()) fail(pointer, "expected an object, found " + describe(value));
        return value;
    }

    // Weights come as a set: all of `names`, or none (then they are generated).
    void require_all(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> names) const {
        for (const auto name : names)
            if (!object.contains(name))
                fail(pointer, fmt::format("missing \"{}\": give all three of {} (or none, to have them generated)", name,
                                          fmt::join(names, ", ")));
    }

    // Refuses keys we do not know, saying where the field is for a name learners try
    // (`aliases`), else suggesting the closest known one (typos like "embedings").
    void only_keys(const Json& object, std::string_view pointer, std::initializer_list<std::string_view> known,
                   const Aliases& aliases) const;

    double number(const Json& value, std::string_view pointer) const {
        if (!value.is_number()) fail(pointer, "expected a number, found " + describe(value));
        const double x = value.get<double>();
        if (!std::isfinite(x)) fail(pointer, "number out of range: it does not fit a double");
        return x;
    }

    // How many numbers a vector (an array, or the parser's packed form) holds; refuses
    // anything else, an empty one and one beyond the limit. Its numbers are checked by vector().
    std::size_t vector_length(const Json& value, std::string_view pointer) const {
        const bool packed = is_packed_numbers(value);  // the parser's fast form: only numbers, all finite
        if (!packed) {
            if (!value.is_array())
                fail(pointer, "expected an array of numbers (a vector), found " + describe(value));
            if (value.empty()) fail(pointer, "empty vector: a vector needs at least one number");
        }
        const std::size_t count = packed ? packed_size(value) : value.size();
        if (count > max_dimension) too_long(pointer, count);
        return count;
    }

    // A non-empty array of numbers; `expected` > 0 fixes its length.
    Vector vector(const Json& value, std::string_view pointer, Eigen::Index expected,
                  std::string_view expected_why) const {
        const auto size = static_cast<Eigen::Index>(vector_length(value, pointer));
        if (expected > 0 && size != expected)
            fail(pointer, fmt::format("vector of {} number{}, expected {} ({})", size,
                                      size == 1 ? "" : "s", expected, expected_why));
        Vector v(size);
        if (is_packed_numbers(value)) {
            copy_packed(value, v.data());
        } else {
            for (Eigen::Index i = 0; i < size; ++i)
                v(i) = number(value[static_cast<std::size_t>(i)],
                              pointer_child(pointer, static_cast<std::size_t>(i)));
        }
        return v;
    }

    // An array of rows, all of one length.
    Matrix matrix(const Json& value, std::string_view pointer) const;

    // How a message names the vectors of one matrix or one object of word vectors: `noun`
    // ("row", "vector"), one of them in a list (`name`: row 2, "journey"), and where one
    // stands (`place`: /embeddings/1 (row 2), /embeddings/journey).
    struct VectorNames {
        std::string_view noun;
        std::function<std::string(std::size_t)> name, place;
    };

    // The length that vectors meant to have one length have. When they disagree, the length
    // most of them have is taken as right and the others are refused by name; when no length
    // is the most common, every length is named with the vectors that have it.
    std::size_t common_length(std::string_view pointer, const std::vector<std::size_t>& lengths, const VectorNames& names) const;

    // A weight matrix meant to be rows × cols (either ≤ 0: any), stored in the input's layout:
    // an (out, in) one is transposed into d_in × d_out here, so the rest of attntrace sees X·W
    // only. A square matrix from a binary array fits both layouts, so without a stated layout
    // it is refused rather than guessed (nn.Linear keeps (out, in); we keep (in, out)).
    Matrix weight(const Json& value, std::string_view pointer, Eigen::Index rows, Eigen::Index cols,
                  std::string_view names) const;

    [[noreturn]] void too_long(std::string_view pointer, std::size_t size) const {
        fail(pointer, fmt::format("vector of {} numbers, more than the limit of {}", size, max_dimension));
    }

    void check_token_count(std::string_view pointer, std::size_t count) const {
        if (count > max_tokens)
            fail(pointer, fmt::format("{} tokens, more than the limit of {}", count, max_tokens));
    }

    std::string string(const Json& value, std::string_view pointer) const { return string_ref(value, pointer); }

    const std::string& string_ref(const Json& value, std::string_view pointer) const {
        if (!value.is_string()) fail(pointer, "expected a string, found " + describe(value));
        return value.get_ref<const std::string&>();
    }

    // A string shown in tables or headings: one line, no control characters.
    std::string label(const Json& value, std::string_view pointer) const {
        std::string text = string(value, pointer);
        plain_text(text, pointer);
        return text;
    }

    // A sentence may also hold the white space that splitting removes.
    void plain_text_in_sentence(std::string_view sentence, std::string_view pointer) const {
        for (std::size_t from = 0; from <= sentence.size();) {
            const std::size_t space = sentence.find_first_of("\t\n\r\f\v", from);
            plain_text(sentence.substr(from, space == std::string_view::npos ? space : space - from), pointer);
            if (space == std::string_view::npos) break;
            from = space + 1;
        }
    }

    // Text that attntrace prints (labels, words, descriptions) may not act on a terminal.
    void plain_text(std::string_view text, std::string_view pointer) const {
        if (const auto c = first_control_character(text))
            fail(pointer, fmt::format("control or formatting character U+{:04X} in the text: labels, "
                                      "words and descriptions are printed, so they must be plain text",
                                      static_cast<std::uint32_t>(*c)));
    }

private:
    std::string origin_;
    MemoryBudget* budget_;
    const ArrayNames* arrays_ = nullptr;
    WeightLayout layout_ = WeightLayout::in_out;
    bool layout_stated_ = false;
};

}  // namespace attntrace
