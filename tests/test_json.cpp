// The JSON parser: numbers read exactly as std::from_chars reads them, packed arrays, and the
// grammar's corners.
#include "core/error.hpp"
#include "core/generator.hpp"
#include "input/json_text.hpp"

#include "support/refusal.hpp"

#include "support/catch.hpp"
#include <fmt/format.h>

#include <charconv>
#include <functional>
#include <omp.h>
#include <cstring>

using namespace attntrace;
using Catch::Contains;

namespace {

double reference(const std::string& literal) {
    double value = 0;
    std::from_chars(literal.data(), literal.data() + literal.size(), value);
    return value;
}

std::vector<double> packed(const Json& value) {
    REQUIRE(is_packed_numbers(value));
    std::vector<double> out(packed_size(value));
    copy_packed(value, out.data());
    return out;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("numbers of every length read alike before every byte and at the end", "[json]") {
    // The usual number's one-loop path and the general one, at each length: runs of 1 to 20
    // digits before and after the point, followed by each byte that may follow a number, by
    // bytes that may not (refused), and by nothing (the number a whole document, the text
    // ending right after it).
    const std::vector<std::string> between{"", ",0", " ", "\n", "\t", "\r"};
    const std::vector<std::string> refused{"x", "/", ":", "\x7f", "\xc3\xa9", "0x", "..", "e"};
    SplitMix64 rng(31);
    const auto digits = [&](int count) {
        std::string d;
        for (int i = 0; i < count; ++i) d += static_cast<char>('0' + static_cast<int>(rng.uniform() * 10) % 10);
        return d;
    };
    int compared = 0;
    for (int whole = 1; whole <= 20; ++whole)
        for (int fraction = 0; fraction <= 20; ++fraction)
            for (const std::string sign : {"", "-"}) {
                std::string number = digits(whole);
                if (whole > 1 && number[0] == '0') number[0] = '7';  // no leading zero
                if (fraction > 0) number += "." + digits(fraction);
                number = sign + number;
                INFO(number);
                const double want = reference(number);
                CHECK(same_bits(parse_json(number, "t").get<double>(), want));
                CHECK(same_bits(parse_json("{\"a\":" + number + "}", "t")["a"].get<double>(), want));
                for (const std::string& after : between) {
                    const auto numbers = packed(parse_json("[" + number + after + "]", "t"));
                    REQUIRE(numbers.size() == (after == ",0" ? 2u : 1u));
                    CHECK(same_bits(numbers[0], want));
                    ++compared;
                }
                for (const std::string& after : refused) {
                    INFO("followed by " << after);
                    CHECK_THROWS_AS(parse_json("[" + number + after + "]", "t"), DataError);
                }
            }
    CHECK(compared == 20 * 21 * 2 * 6);
}

TEST_CASE("numbers parse to the very double from_chars gives", "[json]") {
    std::vector<std::string> literals{"0", "-0", "1", "-1", "0.1", "0.5", "123", "1e22", "1e23", "-2.5e-3",
                                      "9007199254740992", "9007199254740993", "0.000123456", "120.0100",
                                      "123456789012345678901234", "1.7976931348623157e308", "5e-324",
                                      "2.2250738585072014e-308", "0.30000000000000004", "1e-22", "4.35e+2",
                                      // the edges of the one-loop path: 19 digits, 2^53, leading zeros
                                      "1234567890123456789", "12345678901234567890", "9007199254740993.5",
                                      "900719925474099.3", "0.1234567890123456789", "-0.0", "0.000",
                                      "0.0000000000000000001", "0.00000000000000000012", "-9.999999999999999999"};
    SplitMix64 rng(2024);
    for (int i = 0; i < 20000; ++i) {
        const double x = rng.symmetric(1.0) * std::pow(10.0, static_cast<int>(rng.uniform() * 30) - 15);
        literals.push_back(fmt::format("{}", x));        // shortest round trip, up to 17 digits
        literals.push_back(fmt::format("{:.6f}", x));    // the generator's style
        literals.push_back(fmt::format("{:.12e}", x));
        literals.push_back(fmt::format("{:.19f}", x));   // more digits than the fast path takes
    }
    std::string array = "[";
    for (std::size_t i = 0; i < literals.size(); ++i) array += (i ? "," : "") + literals[i];
    array += "]";
    const auto numbers = packed(parse_json(array, "t"));
    REQUIRE(numbers.size() == literals.size());
    for (std::size_t i = 0; i < literals.size(); ++i) {
        INFO(literals[i]);
        CHECK(same_bits(numbers[i], reference(literals[i])));
    }
}

TEST_CASE("arrays of numbers are packed and anything else stays a JSON array", "[json]") {
    const Json doc = parse_json(R"({"v": [1, 2.5, -3e2], "mixed": [1, "a", 2.0], "empty": [], "rows": [[1], [2, 3]]})", "t");
    CHECK(packed(doc["v"]) == std::vector<double>{1, 2.5, -300});
    REQUIRE(doc["mixed"].is_array());
    CHECK(doc["mixed"][0] == 1);  // still an integer node
    CHECK(doc["mixed"][0].is_number_integer());
    CHECK(doc["mixed"][1] == "a");
    CHECK(doc["mixed"][2].is_number_float());
    CHECK(doc["empty"].is_array());
    CHECK(doc["empty"].empty());
    CHECK(doc["rows"].is_array());  // rows of different lengths: not a matrix
    CHECK(packed(doc["rows"][1]) == std::vector<double>{2, 3});
    const Json matrix = parse_json("[[1, 2], [3, 4.5], [-5, 6]]", "t");
    REQUIRE(is_packed_matrix(matrix));
    CHECK(rows_of(matrix) == 3);
    CHECK(packed_columns(matrix) == 2);
    CHECK(describe(matrix) == "an array of 3 rows of 2 numbers");
    std::vector<double> cells(packed_size(matrix));
    copy_packed(matrix, cells.data());
    CHECK(cells == std::vector<double>{1, 2, 3, 4.5, -5, 6});
    CHECK(parse_json("[[1], []]", "t").is_array());        // an empty row: not a matrix
    CHECK(parse_json("[[1], [\"a\"]]", "t").is_array());  // a string: not a matrix
    CHECK(describe(doc["v"]) == "an array of 3 numbers");
}

TEST_CASE("strings decode escapes and keep UTF-8", "[json]") {
    // An array of strings only is packed (the tokens' form); in an object they are nodes.
    const Json doc = parse_json(R"(["a\"b\\c\/d\n\t", "\u00e9\u65e5", "\ud83d\ude00", "é日😀"])", "t");
    REQUIRE(is_packed_strings(doc));
    const PackedStrings strings = packed_strings(doc);
    REQUIRE(strings.count == 4);
    CHECK(strings[0] == "a\"b\\c/d\n\t");
    CHECK(strings[1] == "é日");
    CHECK(strings[2] == "😀");
    CHECK(strings[3] == "é日😀");
    CHECK(describe(doc) == "an array of 4 strings");
    const Json object = parse_json(R"({"a": "\u00e9\u65e5", "b": ["x", 1], "c": ["x\u0000y"]})", "t");
    CHECK(object["a"] == "é日");
    CHECK(object["b"][0] == "x");  // not strings only: nodes
    CHECK(object["c"][0] == std::string("x\0y", 3));  // a NUL inside: nodes
    CHECK(parse_json("\xEF\xBB\xBF{\"a\": 1}", "t")["a"] == 1);  // a byte order mark is skipped
    CHECK(parse_json(R"({"big": 18446744073709551615, "neg": -9223372036854775808})", "t")["big"].is_number_unsigned());
}

TEST_CASE("the grammar's corners are refused where they are", "[json][errors]") {
    const auto fails = [](const std::string& text, const std::string& fragment) {
        INFO(text);
        REQUIRE_THROWS_AS(parse_json(text, "t"), DataError);
        REQUIRE_THROWS_WITH(parse_json(text, "t"), Contains(fragment));
    };
    fails("[01]", "t:1:2: invalid JSON: invalid number '01'");
    fails("[1.]", "t:1:2: invalid JSON: invalid number");
    fails("[.5]", "t:1:2: invalid JSON: expected a value");
    fails("[+1]", "t:1:2: invalid JSON: expected a value");
    fails("[1e]", "invalid number");
    fails("[1,]", "t:1:3: invalid JSON: trailing comma");
    fails("[1 2]", "t:1:4: invalid JSON: expected ',' or ']' after an array element");
    fails("{\"a\" 1}", "t:1:6: invalid JSON: expected ':' after the key");
    fails("{\"a\": 1,}", "t:1:8: invalid JSON: trailing comma");
    fails("{'a': 1}", "t:1:2: invalid JSON: expected a string key");
    fails("[NaN]", "NaN and Infinity are not JSON numbers");
    fails("[Infinity]", "NaN and Infinity are not JSON numbers");
    fails("[tru]", "t:1:2: invalid JSON: expected a value (object, array, string, number, true, false or null), found 'tru'");
    fails("[\"a\\x\"]", "t:1:4: invalid JSON: invalid escape '\\x'");
    fails("[\"\\u12\"]", "invalid \\u escape");
    fails("[\"\\udc00\"]", "lone surrogate");
    fails("[\"a\nb\"]", "t:1:4: invalid JSON: a line break in a string");
    fails("[\"a\tb\"]", "t:1:4: invalid JSON: control character U+0009 in a string");
    fails("[\"a\xc3\x28\"]", "t:1:4: invalid JSON: ill-formed UTF-8 byte 0xc3");
    fails("[\"abc", "unexpected end of input inside a string");
    fails("[1] [2]", "t:1:5: invalid JSON: text after the end of the JSON document");
    fails("// comment\n{}", "t:1:1: invalid JSON: expected a value");
    fails("[1e400]", "t:1:2: number out of range: 1e400 does not fit a double");
    fails("[-1e400]", "t:1:2: number out of range: -1e400");
    fails("{\"a\": [{\"b\": 1, \"b\": 2}]}", "t: /a/0/b: duplicate key \"b\"");
    CHECK(packed(parse_json("[1e-400]", "t"))[0] == 0.0);  // underflow is zero, not an error
}

namespace {

// The message parse_json refuses `text` with ("" when it parses).
std::string refusal(const std::string& text) { return errors::message_of([&] { parse_json(text, "t"); }); }

}  // namespace

TEST_CASE("a trailing comma is named and located at the comma, not at the bracket after it", "[json][errors][hints]") {
    const std::string rule = "invalid JSON: trailing comma: JSON allows no comma before the closing ";
    // Line 3 is ` "embeddings": {"a": [1],`: the comma after [1] is its 25th character; the
    // '}' it comes before is on line 4.
    CHECK(refusal("{\n \"sentence\": \"a\",\n \"embeddings\": {\"a\": [1],\n }\n}") == "t:3:25: " + rule + "'}', so remove this one");
    // Arrays of each form the parser reads: numbers, strings, rows, and anything else.
    CHECK(refusal("[1, 2,\n]") == "t:1:6: " + rule + "']', so remove this one");
    CHECK(refusal("[\"a\", \"b\",]") == "t:1:10: " + rule + "']', so remove this one");
    CHECK(refusal("[[1, 2],\n [3, 4],\n]") == "t:2:8: " + rule + "']', so remove this one");
    CHECK(refusal("[true, {},]") == "t:1:10: " + rule + "']', so remove this one");
    CHECK(refusal("{\"w\": {\"a\": [1], \"b\": [2],}}") == "t:1:26: " + rule + "'}', so remove this one");
}

TEST_CASE("syntax errors say what the likely mistake is, where it stands", "[json][errors][hints]") {
    const std::string value = "invalid JSON: expected a value (object, array, string, number, true, false or null), found ";
    const std::string key = "invalid JSON: expected a string key, found ";
    // Single quotes: the text between them comes back in double quotes.
    CHECK(refusal("{\"sentence\": 'journey'}") == "t:1:14: " + value + "a single quote: JSON strings and keys use double quotes, as in \"journey\"");
    CHECK(refusal("{'sentence': 1}") == "t:1:2: " + key + "a single quote: JSON strings and keys use double quotes, as in \"sentence\"");
    // Comments, where a key, a value, a separator or nothing more is expected.
    const std::string comments = "JSON has no comments, so remove it (a note for the learner can go in \"description\")";
    CHECK(refusal("{\n  // the example of the lecture\n  \"a\": 1}") == "t:2:3: " + key + "'//': " + comments);
    CHECK(refusal("[1, /* two */ 2]") == "t:1:5: " + value + "'/*': " + comments);
    CHECK(refusal("{\"a\": 1 // one\n}") == "t:1:9: invalid JSON: expected ',' or '}' after an object member, found '//': " + comments);
    CHECK(refusal("[1] // done") == "t:1:5: invalid JSON: text after the end of the JSON document: " + comments);
    // Numbers with nothing on one side of the point, a '+' sign, a leading zero.
    const std::string point = "(a JSON number needs a digit on both sides of the point)";
    CHECK(refusal("[0.5, .5]") == "t:1:7: " + value + "'.5': write 0.5 " + point);
    CHECK(refusal("[-.5]") == "t:1:2: invalid JSON: invalid number '-.5': write -0.5 " + point);
    CHECK(refusal("[1.]") == "t:1:2: invalid JSON: invalid number '1.': write 1.0 " + point);
    CHECK(refusal("[2, 1.e3]") == "t:1:5: invalid JSON: invalid number '1.e3': write 1.0e3 " + point);
    CHECK(refusal("[+1]") == "t:1:2: " + value + "'+1': write 1 (a JSON number has no '+' sign)");
    CHECK(refusal("[01]") == "t:1:2: invalid JSON: invalid number '01': write 1 (a JSON number does not start with a 0 followed by more digits)");
    // Bare words: Python's and JavaScript's spellings, unquoted keys and text.
    CHECK(refusal("[True]") == "t:1:2: " + value + "'True': write true, as JSON spells true, false and null in lower case");
    CHECK(refusal("{\"a\": None}") == "t:1:7: " + value + "'None': write null, JSON's word for no value");
    CHECK(refusal("{tokens: 1}") == "t:1:2: " + key + "'tokens': keys need double quotes, as in \"tokens\"");
    CHECK(refusal("{\"mode\": self}") == "t:1:10: " + value + "'self': JSON's only bare words are true, false and null; text needs double quotes, as in \"self\"");
    for (const char* word : {"[NaN]", "[nan]", "[Infinity]", "[-Infinity]", "[inf]"}) {
        INFO(word);
        CHECK(refusal(word) == "t:1:2: invalid JSON: NaN and Infinity are not JSON numbers: every number must be finite");
    }
    // A missing comma between two members or two elements.
    CHECK(refusal("{\"a\": 1\n \"b\": 2}") == "t:2:2: invalid JSON: expected ',' or '}' after an object member, found '\"': perhaps a ',' is missing before it");
    CHECK(refusal("[1 2]") == "t:1:4: invalid JSON: expected ',' or ']' after an array element, found '2': perhaps a ',' is missing before it");
    // A string left open: at the end of its line, or at the typographic quote that was meant
    // to close it (column 20: `{"sentence": "hello` is 19 characters).
    CHECK(refusal("{\"sentence\": \"hello,\n \"b\": 1}") ==
          "t:1:21: invalid JSON: a line break in a string: is its closing '\"' missing? (a line break inside a string is written \\n)");
    CHECK(refusal("{\"sentence\": \"hello\u201d,\n \"b\": 1}") ==
          "t:1:20: invalid JSON: a typographic quote '\u201d' where this string seems to end; JSON strings end with a straight double quote (\")");
}

TEST_CASE("typographic quotes are named, and an unexpected character is shown whole", "[json][errors][hints]") {
    const std::string typographic = "a typographic quote, as word processors write them; JSON needs straight double quotes (\")";
    // “ is three bytes but one column: the key's quote is column 2, the value's column 14.
    CHECK(refusal("{\u201csentence\u201d: 1}") == "t:1:2: invalid JSON: expected a string key, found '\u201c': " + typographic);
    CHECK(refusal("{\"sentence\": \u2018a\u2019}") ==
          "t:1:14: invalid JSON: expected a value (object, array, string, number, true, false or null), found '\u2018': " + typographic);
    CHECK(refusal("{\"a\": 1, \u00e9}") == "t:1:10: invalid JSON: expected a string key, found '\u00e9'");
    // What cannot be shown stays escaped: a control character, a bidi override, a byte that
    // is not UTF-8.
    CHECK(refusal("{\x01}") == "t:1:2: invalid JSON: expected a string key, found '\\x01'");
    CHECK(refusal("{\u202e}") == "t:1:2: invalid JSON: expected a string key, found '\\u202E'");
    CHECK(refusal("{\xe2\x28}") == "t:1:2: invalid JSON: expected a string key, found '\\xe2'");
}

namespace {

// Parses with one thread and with two; both must give the same document or the same error.
void require_same_with_two_threads(const std::string& text) {
    const auto attempt = [&](int threads) -> std::pair<Json, std::string> {
        omp_set_num_threads(threads);
        try {
            return {parse_json(text, "big"), ""};
        } catch (const DataError& e) {
            return {Json(), e.what()};
        }
    };
    const auto one = attempt(1);
    const auto two = attempt(2);
    CHECK(one.second == two.second);
    CHECK(one.first == two.first);
}

std::string rows(int count, const std::function<std::string(int)>& row) {
    std::string text = "[";
    for (int i = 0; i < count; ++i) text += (i ? ",\n  " : "\n  ") + row(i);
    return text + "\n]";
}

}  // namespace

TEST_CASE("long arrays of rows read in two halves give what one thread gives", "[json][threads]") {
    const auto numbers = [](int i) { return fmt::format("[{}, {}.5, -{}e-3]", i, i, i); };
    // Big enough (> 1 MiB) for the two-halves reading.
    const std::string big = rows(60000, numbers);
    REQUIRE(big.size() > (std::size_t{1} << 20));
    const Json doc = parse_json(big, "big");
    REQUIRE(is_packed_matrix(doc));
    REQUIRE(rows_of(doc) == 60000);
    REQUIRE(packed_columns(doc) == 3);
    std::vector<double> all(packed_size(doc));
    copy_packed(doc, all.data());
    CHECK(std::vector<double>(all.end() - 3, all.end()) == std::vector<double>{59999, 59999.5, -59.999});

    require_same_with_two_threads(big);
    require_same_with_two_threads("{\"embeddings\": " + big + ", \"tail\": [[1, 2], [3]]}");
    // The guessed boundary falls inside strings that look like row boundaries.
    require_same_with_two_threads(rows(60000, [](int i) { return fmt::format("[\"a], [b{}\", 1]", i); }));
    // A mistake in the second half is reported where it is, whoever reads it first.
    require_same_with_two_threads(rows(60000, [&](int i) { return i == 45000 ? std::string("[1, 01]") : numbers(i); }));
    require_same_with_two_threads(rows(60000, [&](int i) { return i == 50000 ? std::string("[1, 2") : numbers(i); }));
    // Too deep in the second half: the limit holds for both readings.
    const std::string deep = std::string(70, '[') + std::string(70, ']');
    require_same_with_two_threads(rows(60000, [&](int i) { return i == 40000 ? deep : numbers(i); }));
    omp_set_num_threads(omp_get_num_procs());
}
