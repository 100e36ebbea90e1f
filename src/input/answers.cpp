#include "input/answers.hpp"

#include "core/error.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

namespace attntrace {
namespace {

// A JSON value with each number's text kept (nlohmann gives the numbers only, and a learner's
// precision is in how a number is written).
struct Member;
struct Value {
    enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
    std::string text;  // a number as written, or a string
    std::vector<Value> items;
    std::vector<Member> members;  // a vector may hold a type completed later; a pair may not
};
struct Member {
    std::string key;
    Value value;
};

// Reads a document nlohmann has already accepted, so only the well-formed cases are handled.
class Scanner {
public:
    explicit Scanner(std::string_view text) : text_(text) {}

    Value value() {
        skip();
        Value v;
        const char c = text_[at_];
        if (c == '{') {
            v.kind = Value::Kind::object;
            ++at_;
            skip();
            if (text_[at_] == '}') return ++at_, v;
            for (;;) {
                skip();
                std::string key = string();
                skip();
                ++at_;  // ':'
                v.members.push_back(Member{std::move(key), value()});
                skip();
                if (text_[at_++] == '}') return v;
            }
        }
        if (c == '[') {
            v.kind = Value::Kind::array;
            ++at_;
            skip();
            if (text_[at_] == ']') return ++at_, v;
            for (;;) {
                v.items.push_back(value());
                skip();
                if (text_[at_++] == ']') return v;
            }
        }
        if (c == '"') {
            v.kind = Value::Kind::string;
            v.text = string();
            return v;
        }
        if (text_.substr(at_, 4) == "null") return at_ += 4, v;
        if (text_.substr(at_, 4) == "true") return at_ += 4, v.kind = Value::Kind::boolean, v;
        if (text_.substr(at_, 5) == "false") return at_ += 5, v.kind = Value::Kind::boolean, v;
        v.kind = Value::Kind::number;
        const std::size_t start = at_;
        while (at_ < text_.size() && std::string_view("+-0123456789.eE").find(text_[at_]) != std::string_view::npos) ++at_;
        v.text = std::string(text_.substr(start, at_ - start));
        return v;
    }

private:
    void skip() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
            ++at_;
    }
    // A string's text; escapes other than \" and \\ are kept as written (names and markers are ASCII).
    std::string string() {
        std::string out;
        ++at_;
        while (text_[at_] != '"') {
            if (text_[at_] == '\\') ++at_;
            out += text_[at_++];
        }
        ++at_;
        return out;
    }

    std::string_view text_;
    std::size_t at_ = 0;
};

class AnswerReader {
public:
    explicit AnswerReader(const std::string& origin) : origin_(origin) {}

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw DataError(fmt::format("{}: {}: {}", origin_, where.empty() ? "/" : where, what));
    }

    // A number, or a marker of a hidden entry (null, "-inf", "masked").
    GivenNumber number(const Value& v, const std::string& where) const {
        GivenNumber n;
        if (v.kind == Value::Kind::null || (v.kind == Value::Kind::string && (v.text == "-inf" || v.text == "masked"))) {
            n.masked = true;
            n.value = -std::numeric_limits<double>::infinity();
            n.text = v.kind == Value::Kind::null ? "null" : v.text;
            return n;
        }
        if (v.kind != Value::Kind::number)
            fail(where, "expected a number (or null, \"-inf\" or \"masked\" for a hidden entry)");
        n.text = v.text;
        n.value = std::strtod(v.text.c_str(), nullptr);
        if (!std::isfinite(n.value)) fail(where, fmt::format("the number {} is too large", v.text));
        n.decimals = decimals_of(v.text);
        return n;
    }

    // A 1-based index, given as a whole number from 1.
    Eigen::Index index(const Value& v, const std::string& where) const {
        long long i = 0;
        const char* end = v.text.data() + v.text.size();
        if (v.kind != Value::Kind::number || std::from_chars(v.text.data(), end, i).ptr != end || i < 1)
            fail(where, "expected a whole number from 1 (rows and columns count from 1)");
        return static_cast<Eigen::Index>(i - 1);
    }

    std::vector<GivenNumber> row_of(const Value& v, Eigen::Index row, const std::string& where) const {
        if (v.kind != Value::Kind::array || v.items.empty()) fail(where, "expected an array of numbers (a row)");
        std::vector<GivenNumber> out;
        for (std::size_t j = 0; j < v.items.size(); ++j) {
            GivenNumber n = number(v.items[j], fmt::format("{}/{}", where, j));
            n.row = row;
            n.col = static_cast<Eigen::Index>(j);
            out.push_back(std::move(n));
        }
        return out;
    }

    // A stage: a matrix, {"row": R, "values": [...]} or {"cell": [R, C], "value": V}.
    GivenStage stage(StageId id, int head, const Value& v, const std::string& where) const {
        GivenStage s{id, head, where, std::nullopt, std::nullopt, {}};
        if (v.kind == Value::Kind::array) {
            if (v.items.empty()) fail(where, "expected an array of rows, found an empty array");
            for (std::size_t i = 0; i < v.items.size(); ++i) {
                auto row = row_of(v.items[i], static_cast<Eigen::Index>(i), fmt::format("{}/{}", where, i));
                if (i > 0 && row.size() != static_cast<std::size_t>(*s.cols))
                    fail(fmt::format("{}/{}", where, i), fmt::format("a row of {} numbers after rows of {}", row.size(), *s.cols));
                s.cols = static_cast<Eigen::Index>(row.size());
                s.numbers.insert(s.numbers.end(), row.begin(), row.end());
            }
            s.rows = static_cast<Eigen::Index>(v.items.size());
            return s;
        }
        if (v.kind != Value::Kind::object)
            fail(where, "expected a matrix (an array of rows), {\"row\": R, \"values\": [...]} or "
                        "{\"cell\": [R, C], \"value\": V}");
        const Value* row = member(v, "row");
        const Value* values = member(v, "values");
        const Value* cell = member(v, "cell");
        const Value* value = member(v, "value");
        if (row && values && !cell && !value && v.members.size() == 2) {
            s.numbers = row_of(*values, index(*row, where + "/row"), where + "/values");
            return s;
        }
        if (cell && value && !row && !values && v.members.size() == 2) {
            if (cell->kind != Value::Kind::array || cell->items.size() != 2)
                fail(where + "/cell", "expected [row, column], each counted from 1");
            GivenNumber n = number(*value, where + "/value");
            n.row = index(cell->items[0], where + "/cell/0");
            n.col = index(cell->items[1], where + "/cell/1");
            s.numbers.push_back(std::move(n));
            return s;
        }
        fail(where, "expected {\"row\": R, \"values\": [...]} or {\"cell\": [R, C], \"value\": V}, and nothing else");
    }

    // The stages of one object: the top level or a head's.
    void stages_of(const Value& object, int head, const std::string& where, std::vector<GivenStage>& out) const {
        for (const auto& [key, value] : object.members) {
            const std::string at = where + "/" + key;
            if (key == "heads" || key == "head" || key == "$schema" || key == "comment") continue;
            const auto id = parse_enum<StageId>(key);
            if (!id || *id == StageId::parameters || *id == StageId::dot || *id == StageId::cosine)
                fail(at, fmt::format("\"{}\" is not a stage of the trace (scores, scaled, masked, weights, context, …)", key));
            out.push_back(stage(*id, head, value, at));
        }
    }

    static const Value* member(const Value& object, std::string_view name) {
        for (const auto& [key, value] : object.members)
            if (key == name) return &value;
        return nullptr;
    }

private:
    std::string origin_;
};

std::vector<GivenStage> read_json(std::string_view text, const std::string& origin) {
    try {
        [[maybe_unused]] const auto checked = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        throw DataError(fmt::format("{}: not valid JSON at byte {}", origin, e.byte));
    }
    const Value doc = Scanner(text).value();
    const AnswerReader reader(origin);
    if (doc.kind != Value::Kind::object) reader.fail("", "expected an object of stages, such as {\"weights\": [[...]]}");
    int head = 0;
    if (const Value* h = AnswerReader::member(doc, "head")) head = static_cast<int>(reader.index(*h, "/head")) + 1;
    std::vector<GivenStage> out;
    reader.stages_of(doc, head, "", out);
    if (const Value* heads = AnswerReader::member(doc, "heads")) {
        if (heads->kind != Value::Kind::object) reader.fail("/heads", "expected an object of heads: {\"1\": {...}}");
        for (const auto& [key, value] : heads->members) {
            int h = 0;
            const auto [end, error] = std::from_chars(key.data(), key.data() + key.size(), h);
            if (error != std::errc() || end != key.data() + key.size() || h < 1)
                reader.fail("/heads/" + key, "a head is named by its number, from 1");
            if (value.kind != Value::Kind::object) reader.fail("/heads/" + key, "expected an object of stages");
            reader.stages_of(value, h, "/heads/" + key, out);
        }
    }
    if (out.empty()) reader.fail("", "no stages given: name at least one, such as \"weights\"");
    return out;
}

// One CSV line's fields, quotes undone.
std::vector<std::string> csv_fields(std::string_view line) {
    std::vector<std::string> fields(1);
    bool quoted = false;
    for (std::size_t i = 0; i < line.size(); ++i) {
        const char c = line[i];
        if (quoted) {
            if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') fields.back() += '"', ++i;
            else if (c == '"') quoted = false;
            else fields.back() += c;
        } else if (c == '"') {
            quoted = true;
        } else if (c == ',') {
            fields.emplace_back();
        } else if (c != '\r') {
            fields.back() += c;
        }
    }
    return fields;
}

// The tidy CSV of `--format csv --tidy`: rows and columns from 0, an empty value where hidden.
std::vector<GivenStage> read_csv(std::string_view text, const std::string& origin) {
    std::vector<GivenStage> out;
    std::map<std::pair<StageId, int>, std::size_t> index;
    std::size_t line_no = 0;
    std::map<std::string, std::size_t> column;
    for (std::size_t from = 0; from < text.size();) {
        const std::size_t end = std::min(text.find('\n', from), text.size());
        const std::string_view line = text.substr(from, end - from);
        from = end + 1;
        ++line_no;
        if (line.empty() || line == "\r") continue;
        const auto fields = csv_fields(line);
        const std::string where = fmt::format("line {}", line_no);
        if (column.empty()) {
            for (std::size_t i = 0; i < fields.size(); ++i) column[fields[i]] = i;
            for (const char* name : {"stage", "head", "row", "col", "value"})
                if (!column.contains(name))
                    throw DataError(fmt::format("{}: line 1: the header has no column {} (stage,head,row,col,value as "
                                                "--format csv --tidy writes them)", origin, name));
            continue;
        }
        auto field = [&](const char* name) -> const std::string& {
            const std::size_t i = column.at(name);
            if (i >= fields.size()) throw DataError(fmt::format("{}: {}: no {} field", origin, where, name));
            return fields[i];
        };
        const auto id = parse_enum<StageId>(field("stage"));
        if (!id || *id == StageId::parameters || *id == StageId::dot || *id == StageId::cosine) continue;  // W_q …: not answers
        int head = 0;
        long long row = -1, col = -1;
        const auto whole = [](const std::string& s, auto& v) {
            return std::from_chars(s.data(), s.data() + s.size(), v).ptr == s.data() + s.size() && !s.empty();
        };
        if (!field("head").empty() && !whole(field("head"), head))
            throw DataError(fmt::format("{}: {}: head {} is not a number", origin, where, field("head")));
        if (!whole(field("row"), row) || !whole(field("col"), col) || row < 0 || col < 0)
            throw DataError(fmt::format("{}: {}: row and col are whole numbers from 0", origin, where));
        GivenNumber n;
        n.row = row, n.col = col;
        const std::string& value = field("value");
        if (value.empty() || value == "-inf" || value == "masked") {
            n.masked = true;
            n.value = -std::numeric_limits<double>::infinity();
            n.text = value.empty() ? "(empty)" : value;
        } else {
            char* stop = nullptr;
            n.value = std::strtod(value.c_str(), &stop);
            if (stop != value.c_str() + value.size() || !std::isfinite(n.value))
                throw DataError(fmt::format("{}: {}: value {} is not a number", origin, where, value));
            n.text = value;
            n.decimals = decimals_of(value);
        }
        const auto key = std::pair{*id, head};
        if (!index.contains(key)) {
            index[key] = out.size();
            out.push_back({*id, head, fmt::format("{} (from {})", to_string(*id), where), std::nullopt, std::nullopt, {}});
        }
        out[index[key]].numbers.push_back(std::move(n));
    }
    if (out.empty()) throw DataError(fmt::format("{}: no stages given", origin));
    return out;
}

}  // namespace

int decimals_of(std::string_view text) {
    const std::size_t e = text.find_first_of("eE");
    const std::string_view mantissa = text.substr(0, e);
    const std::size_t point = mantissa.find('.');
    int decimals = point == std::string_view::npos ? 0 : static_cast<int>(mantissa.size() - point - 1);
    if (e != std::string_view::npos) {
        int exponent = 0;
        std::string_view rest = text.substr(e + 1);
        if (!rest.empty() && rest.front() == '+') rest.remove_prefix(1);
        std::from_chars(rest.data(), rest.data() + rest.size(), exponent);
        decimals -= exponent;
    }
    return std::max(decimals, 0);
}

std::vector<GivenStage> read_answers(std::string_view text, const std::string& origin) {
    std::size_t first = 0;
    while (first < text.size() && (text[first] == ' ' || text[first] == '\n' || text[first] == '\t' || text[first] == '\r'))
        ++first;
    if (first < text.size() && (text[first] == '{' || text[first] == '['))
        return read_json(text, origin);
    return read_csv(text, origin);
}

}  // namespace attntrace
