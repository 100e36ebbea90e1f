// simdjson_errors: what simdjson's On-Demand API (Debian 12's libsimdjson-dev 3.0.1) reports
// for the JSON mistakes attntrace's parser names (tests/test_json.cpp, tests/test_bad_inputs.cpp):
// the error code, its message, and the byte offset current_location() gives after the error.
// A feasibility probe for docs/performance.md ("Reading JSON: our parser and simdjson
// On-Demand"); not part of the CMake build or of ctest.
//
//   nice -n 19 g++ -O2 -std=c++20 tests/perf/simdjson_errors.cpp -lsimdjson -o /tmp/simdjson_errors
//   /tmp/simdjson_errors
//
// Each document is walked whole (every key, every value read by its type), as a reader that
// builds a Problem would walk it; the first error ends the walk. The last two lines read one
// member only, to show what On-Demand leaves unchecked in what it skips.
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace {

namespace od = simdjson::ondemand;

simdjson::error_code visit(od::value v, int depth);

simdjson::error_code visit_array(od::array a, int depth) {
    for (auto item : a) {
        od::value v;
        if (auto e = item.get(v)) return e;
        if (auto e = visit(v, depth + 1)) return e;
    }
    return simdjson::SUCCESS;
}

simdjson::error_code visit_object(od::object o, int depth) {
    for (auto field : o) {
        std::string_view key;
        if (auto e = field.unescaped_key().get(key)) return e;
        od::value v;
        if (auto e = field.value().get(v)) return e;
        if (auto e = visit(v, depth + 1)) return e;
    }
    return simdjson::SUCCESS;
}

simdjson::error_code visit(od::value v, int depth) {
    od::json_type t;
    if (auto e = v.type().get(t)) return e;
    switch (t) {
    case od::json_type::object: {
        od::object o;
        if (auto e = v.get_object().get(o)) return e;
        return visit_object(o, depth);
    }
    case od::json_type::array: {
        od::array a;
        if (auto e = v.get_array().get(a)) return e;
        return visit_array(a, depth);
    }
    case od::json_type::number: return v.get_double().error();
    case od::json_type::string: return v.get_string().error();
    case od::json_type::boolean: return v.get_bool().error();
    case od::json_type::null: return v.is_null().error();
    }
    return simdjson::SUCCESS;
}

std::string shown(std::string_view s) {
    std::string out;
    for (const char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\0') out += "\\0";
        else out += c;
    }
    return out;
}

void probe(const char* name, std::string_view text) {
    const simdjson::padded_string json(text);
    od::parser parser;
    od::document doc;
    simdjson::error_code error = parser.iterate(json).get(doc);
    const char* stage = "iterate";
    if (!error) {
        stage = "walk";
        od::json_type t;
        error = doc.type().get(t);
        if (!error && t == od::json_type::object) {
            od::object o;
            error = doc.get_object().get(o);
            if (!error) error = visit_object(o, 0);
        } else if (!error && t == od::json_type::array) {
            od::array a;
            error = doc.get_array().get(a);
            if (!error) error = visit_array(a, 0);
        }
        if (!error) {  // 3.0.1 has no document::at_end(): past the end, current_location() is out of bounds
            const char* at = nullptr;
            if (doc.current_location().get(at) == simdjson::SUCCESS) {
                stage = "after the walk";
                error = simdjson::TRAILING_CONTENT;
            }
        }
    }
    const std::string written = text.size() > 40 ? shown(text.substr(0, 12)) + "…" : shown(text);
    std::printf("%-28s %-34s ", name, ("`" + written + "`").c_str());
    if (!error) {
        std::printf("accepted\n");
        return;
    }
    std::string where = "no location";
    if (stage != std::string("iterate")) {
        const char* at = nullptr;
        if (const auto e = doc.current_location().get(at); e == simdjson::SUCCESS)
            where = "offset " + std::to_string(at - json.data()) + " ('" + shown(std::string_view(at, 1)) + "')";
        else
            where = std::string("no location (") + simdjson::error_message(e) + ")";
    }
    std::printf("%s: %s [%s], %s\n", stage, simdjson::error_message(error), std::to_string(int(error)).c_str(),
                where.c_str());
}

// On-Demand validates what is read, not what is skipped: only "b" is read here.
void probe_skipped(std::string_view text) {
    const simdjson::padded_string json(text);
    od::parser parser;
    od::document doc = parser.iterate(json);  // no error to throw here: nothing is wrong in stage 1
    std::int64_t b = 0;
    const auto error = doc["b"].get(b);
    std::printf("%-28s %-34s %s, b = %lld\n", "only \"b\" read", ("`" + shown(text) + "`").c_str(),
                simdjson::error_message(error), static_cast<long long>(b));
}

}  // namespace

int main() {
    std::printf("simdjson %s, index %s\n", SIMDJSON_STRINGIFY(SIMDJSON_VERSION), simdjson::get_active_implementation()->name().c_str());
    probe("trailing comma, object", R"({"a": [1],})");
    probe("trailing comma, array", "{\"e\": [[1, 2],\n]}");
    probe("single quotes", R"({"sentence": 'a'})");
    probe("single-quoted key", R"({'sentence': 1})");
    probe("a comment", "{\"a\": 1, // why\n \"b\": 2}");
    probe("True", R"({"a": True})");
    probe("None", R"({"a": None})");
    probe("NaN", R"({"a": [1, NaN]})");
    probe("-Infinity", R"({"a": -Infinity})");
    probe("truncated in an array", R"({"a": [1, 2)");
    probe("truncated in a string", R"({"a": "xy)");
    probe("missing comma", R"({"a": 1 "b": 2})");
    probe("number .5", R"({"a": .5})");
    probe("number 01", R"({"a": 01})");
    probe("number 1e400", R"({"a": 1e400})");
    probe("duplicate key", R"({"a": 1, "a": 2})");
    probe("text after the document", R"({"a": 1} x)");
    probe("typographic quotes", "{\"a\": \xE2\x80\x9Cx\xE2\x80\x9D}");
    probe("lone surrogate", R"({"a": "\ud800"})");
    probe("line break in a string", "{\"a\": \"x\ny\"}");
    probe("invalid UTF-8", "{\"a\": \"\xC3\x28\"}");
    probe("NUL byte", std::string_view("{\"a\": 1\0}", 9));
    probe("byte order mark", "\xEF\xBB\xBF{\"a\": 1}");
    probe("number +1", R"({"a": +1})");
    probe("number 1.", R"({"a": 1.})");
    probe("number 1e-400 (underflow)", R"({"a": 1e-400})");
    probe("integer beyond 64 bits", R"({"a": 123456789012345678901234567890})");
    probe("empty input", "  ");
    probe("nested 65 deep", std::string(65, '[') + std::string(65, ']'));
    probe("nested 2000 deep", std::string(2000, '[') + std::string(2000, ']'));
    probe_skipped(R"({"a": [1, tru, 'x'], "b": 2})");
    probe_skipped(R"({"a": {"x": ,,}, "b": 2})");
}
