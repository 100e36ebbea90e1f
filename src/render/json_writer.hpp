// Writing JSON as attntrace lays it out, with the commas and the nesting kept by the writer:
// a container puts each item on its own line, indented two spaces a level (Layout::lines), or
// all its items on one line ("[1, 2]", "{"a": 1}": Layout::inline_). Numbers are written round-
// trip exact (a float32 run's as the shortest text of the float); a number that is not finite
// in the run's type (a masked −∞; in float32, anything beyond ±3.4e38) is null: JSON has no
// infinity. Text goes into a buffer that the caller writes
// out as it grows, so a large trace streams. Every product's JSON is written with it.
#pragma once

#include "core/stage.hpp"
#include "core/types.hpp"
#include "render/number.hpp"
#include "util/format.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace attntrace {

class JsonWriter {
public:
    enum class Layout { lines, inline_ };

    explicit JsonWriter(fmt::memory_buffer& out) : out_(out) {}

    JsonWriter& object(Layout layout = Layout::lines) { return open('{', layout); }
    JsonWriter& array(Layout layout = Layout::lines) { return open('[', layout); }
    // Ends the innermost container.
    JsonWriter& end() {
        const Level level = levels_.back();
        levels_.pop_back();
        if (level.items > 0 && level.layout == Layout::lines) newline(levels_.size());
        out_.push_back(level.bracket == '{' ? '}' : ']');
        return *this;
    }

    // The key of the next member of the innermost object.
    JsonWriter& key(std::string_view name) {
        item();
        string_text(name);
        out_.append(std::string_view(": "));
        keyed_ = true;
        return *this;
    }

    JsonWriter& string(std::string_view text) {
        item();
        string_text(text);
        return *this;
    }
    JsonWriter& number(double value, Dtype dtype) {
        item();
        const bool finite = std::isfinite(value) &&
                            (dtype == Dtype::float64 || std::fabs(value) <= std::numeric_limits<float>::max());
        if (finite) append_exact(out_, value, dtype);
        else out_.append(std::string_view("null"));
        return *this;
    }
    // A double as check-answers' and the quiz's documents have written theirs since their
    // first version, in nlohmann_json's way: the shortest digits its Grisu2 finds that read back
    // as the same double, always with a point or an exponent (1.0, 0.25, 5e-05, 1e+16).
    // Finite values only.
    JsonWriter& real(double value);
    JsonWriter& integer(std::int64_t value) {
        item();
        fmt::format_to(std::back_inserter(out_), "{}", value);
        return *this;
    }
    JsonWriter& unsigned_integer(std::uint64_t value) {
        item();
        fmt::format_to(std::back_inserter(out_), "{}", value);
        return *this;
    }
    JsonWriter& boolean(bool value) {
        item();
        out_.append(value ? std::string_view("true") : std::string_view("false"));
        return *this;
    }
    // A number already written as JSON text (a rate to two decimals, say).
    JsonWriter& literal(std::string_view text) {
        item();
        out_.append(text);
        return *this;
    }
    JsonWriter& null() {
        item();
        out_.append(std::string_view("null"));
        return *this;
    }

    // [a, b, c] of strings or of numbers, on one line.
    template <typename Strings>
    JsonWriter& strings(const Strings& items) {
        array(Layout::inline_);
        for (const auto& item : items) string(item);
        return end();
    }
    template <typename Numbers>
    JsonWriter& numbers(const Numbers& values, Dtype dtype) {
        array(Layout::inline_);
        for (const double value : values) number(value, dtype);
        return end();
    }
    // An array of rows, a row a line (Layout::inline_: all on one line, for JSON Lines).
    JsonWriter& matrix(const Matrix& m, Dtype dtype, Layout layout = Layout::lines) {
        array(layout);
        for (Eigen::Index r = 0; r < m.rows(); ++r) numbers(m.row(r), dtype);
        return end();
    }
    // The next item starts on a line of its own, `indent` spaces in, although its container
    // is inline (a long member at the end of an inline object).
    JsonWriter& break_line(std::size_t indent) {
        break_ = indent;
        return *this;
    }

private:
    struct Level {
        char bracket;
        Layout layout;
        std::size_t items = 0;
    };

    JsonWriter& open(char bracket, Layout layout) {
        item();
        out_.push_back(bracket);
        levels_.push_back({bracket, layout});
        return *this;
    }

    // Before an item: the separator its container puts before it (none after a key).
    void item() {
        if (keyed_) {
            keyed_ = false;
            return;
        }
        if (levels_.empty()) return;
        Level& level = levels_.back();
        if (level.items++ > 0) out_.push_back(',');
        if (break_) {
            out_.push_back('\n');
            out_.append(std::string(*break_, ' '));
            break_.reset();
        } else if (level.layout == Layout::lines) {
            newline(levels_.size());
        } else if (level.items > 1) {
            out_.push_back(' ');
        }
    }

    void newline(std::size_t depth) {
        out_.push_back('\n');
        for (std::size_t i = 0; i < depth; ++i) out_.append(std::string_view("  "));
    }

    // `text` as a JSON string literal. `text` is valid UTF-8 (load checked it).
    void string_text(std::string_view text) {
        out_.push_back('"');
        for (const char c : text) {
            switch (c) {
            case '"': out_.append(std::string_view("\\\"")); break;
            case '\\': out_.append(std::string_view("\\\\")); break;
            case '\n': out_.append(std::string_view("\\n")); break;
            case '\t': out_.append(std::string_view("\\t")); break;
            case '\r': out_.append(std::string_view("\\r")); break;
            default:
                if (static_cast<unsigned char>(c) < 0x20)
                    fmt::format_to(std::back_inserter(out_), "\\u{:04x}", static_cast<unsigned char>(c));
                else
                    out_.push_back(c);
            }
        }
        out_.push_back('"');
    }

    fmt::memory_buffer& out_;
    std::vector<Level> levels_;
    bool keyed_ = false;
    std::optional<std::size_t> break_;
};

// Writes what the buffer holds to `os` and empties it, so long output streams.
inline void flush(fmt::memory_buffer& out, std::ostream& os) {
    os.write(out.data(), static_cast<std::streamsize>(out.size()));
    out.clear();
}

}  // namespace attntrace
