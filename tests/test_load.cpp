// load: tokenising, word look-up and the messages for bad input.
#include "core/error.hpp"
#include "attention/trace.hpp"
#include "input/load.hpp"
#include "input/tokenize.hpp"

#include "support/refusal.hpp"

#include "support/catch.hpp"

using namespace attntrace;
using Catch::Contains;

namespace {

std::vector<std::string> texts(const SplitWords& words) {
    std::vector<std::string> out;
    for (std::size_t i = 0; i < words.size(); ++i) out.push_back(words.texts[i] + (words.punctuation[i] ? "(p)" : ""));
    return out;
}

const SingleSequenceInput& single(const Problem& p) { return std::get<SingleSequenceInput>(p.input); }

}  // namespace

TEST_CASE("sentences split into words, punctuation peeled off", "[load][tokenize]") {
    CHECK(texts(split_sentence("Your journey starts with one step.")) ==
          std::vector<std::string>{"Your", "journey", "starts", "with", "one", "step", ".(p)"});
    CHECK(texts(split_sentence("  The teacher's well-known,  \"smile\"!")) ==
          std::vector<std::string>{"The", "teacher's", "well-known", ",(p)", "\"(p)", "smile", "\"(p)", "!(p)"});
    CHECK(texts(split_sentence("le chat noir — très élégant…")) ==
          std::vector<std::string>{"le", "chat", "noir", "—(p)", "très", "élégant", "…(p)"});
    CHECK(split_sentence(" \t\n ").size() == 0);
}

TEST_CASE("word look-up tries the exact spelling first, then case-insensitively, and labels keep the spelling", "[load]") {
    // "BANK" alone would be ambiguous (bank or Bank: refused by the next test); "BaNk" is
    // not spelled like either, but folds to one entry only when there is one.
    const Problem p = load_problem(R"({"sentence": "Bank bank", "embeddings": {"bank": [1, 2], "Bank": [3, 4]}})", "t");
    const auto& seq = single(p).sequence;
    CHECK(seq.tokens == std::vector<std::string>{"Bank", "bank"});
    CHECK(seq.vectors(0, 0) == 3);  // exact "Bank"
    CHECK(seq.vectors(1, 0) == 1);  // exact "bank"
    const Problem folded = load_problem(R"({"sentence": "BaNk river", "embeddings": {"bank": [1, 2], "River": [5, 6]}})", "t");
    CHECK(single(folded).sequence.tokens == std::vector<std::string>{"BaNk", "river"});
    CHECK(single(folded).sequence.vectors(0, 0) == 1);  // folded to "bank"
    CHECK(single(folded).sequence.vectors(1, 0) == 5);  // folded to "River"
}

TEST_CASE("case-insensitive look-up that matches two spellings is refused", "[load]") {
    REQUIRE_THROWS_WITH(load_problem(R"({"sentence": "BANK", "embeddings": {"bank": [1], "Bank": [3]}})", "t"),
                        Contains("differ only in case: bank, Bank"));
}

TEST_CASE("case-insensitive look-up covers accented capitals", "[load]") {
    const Problem p = load_problem(R"({"sentence": "Élan élan", "embeddings": {"élan": [1, 2]}})", "t");
    CHECK(single(p).sequence.tokens == std::vector<std::string>{"Élan", "élan"});
    CHECK(single(p).sequence.vectors.row(0) == single(p).sequence.vectors.row(1));
}

TEST_CASE("repeated words share one vector, and punctuation stays only when named", "[load]") {
    const Problem dropped = load_problem(R"({"sentence": "the cat, the hat.", "embeddings": {"the": [1], "cat": [2], "hat": [3]}})", "t");
    CHECK(single(dropped).sequence.tokens == std::vector<std::string>{"the", "cat", "the", "hat"});
    CHECK(single(dropped).sequence.vectors(0, 0) == single(dropped).sequence.vectors(2, 0));

    const Problem kept = load_problem(R"({"sentence": "the cat, the hat.", "embeddings": {"the": [1], "cat": [2], "hat": [3], ".": [4]}})", "t");
    CHECK(single(kept).sequence.tokens == std::vector<std::string>{"the", "cat", "the", "hat", "."});
    CHECK(single(kept).sequence.vectors(4, 0) == 4);
}

TEST_CASE("array embeddings align with tokens, which are taken as given", "[load]") {
    const Problem p = load_problem(R"({"tokens": ["a", "b,"], "embeddings": [[1, 2], [3, 4]]})", "t");
    CHECK(single(p).sequence.tokens == std::vector<std::string>{"a", "b,"});
    CHECK(single(p).sequence.vectors(1, 1) == 4);
    CHECK(p.vocabulary.words.empty());
}

TEST_CASE("object embeddings keep the file's order as the vocabulary", "[load]") {
    const Problem p = load_problem(R"({"sentence": "b a", "embeddings": {"zebra": [0], "b": [1], "a": [2]}})", "t");
    REQUIRE(p.vocabulary.words.size() == 3);
    CHECK(p.vocabulary.words[0] == "zebra");
    CHECK(p.vocabulary.words[2] == "a");
    CHECK(p.vocabulary.vectors(1, 0) == 1);
}

TEST_CASE("weights are read as d_in × d_k matrices of rows", "[load]") {
    const Problem p = load_problem(R"({"tokens": ["a", "b"], "embeddings": [[1, 2, 3], [4, 5, 6]],
        "weights": {"query": [[1, 0], [0, 1], [1, 1]], "key": [[1, 0], [0, 1], [0, 0]], "value": [[1], [2], [3]]}})", "t");
    const auto& w = *single(p).weights;
    CHECK(w.query.rows() == 3);
    CHECK(w.query.cols() == 2);
    CHECK(w.query(2, 1) == 1);
    CHECK(w.value.cols() == 1);
}

TEST_CASE("data errors name the input, the JSON pointer, what was expected and found", "[load][errors]") {
    const auto fails_with = [](const std::string& json, const std::string& fragment) {
        INFO(json);
        REQUIRE_THROWS_AS(load_problem(json, "in.json"), DataError);
        REQUIRE_THROWS_WITH(load_problem(json, "in.json"), Contains("in.json") && Contains(fragment));
    };
    fails_with("[1, 2]", "/: expected an object, found an array of 2");
    fails_with("{}", "missing \"sentence\"");
    fails_with(R"({"sentence": "a", "tokens": ["a"], "embeddings": {"a": [1]}})", "not both");
    fails_with(R"({"sentence": "a"})", "missing \"embeddings\"");
    fails_with(R"({"sentence": "", "embeddings": {"a": [1]}})", "/sentence: the sentence has no words");
    fails_with(R"({"sentence": " ?! ", "embeddings": {"a": [1]}})", "/sentence: no words left after dropping punctuation");
    fails_with(R"({"sentence": "Your jurney", "embeddings": {"Your": [1], "journey": [2]}})",
               "/sentence: unknown word \"jurney\" (token 2 of 2): /embeddings has no vector for it; closest known words: journey, Your");
    fails_with(R"({"tokens": ["a", "zz"], "embeddings": {"a": [1]}})",
               "/tokens/1 (token 2 of 2): unknown word \"zz\": /embeddings has no vector for it; closest known words: a");
    fails_with(R"({"sentence": "a b c", "embeddings": {"a": [1, 2], "b": [1], "c": [3, 4]}})",
               "/embeddings/b: vector of 1 number, expected 2 like the other 2 vectors");
    fails_with(R"({"sentence": "a", "embeddings": {"a": []}})", "/embeddings/a: empty vector");
    fails_with(R"({"sentence": "a", "embeddings": {"a": [1, "2"]}})", "/embeddings/a/1: expected a number, found string \"2\"");
    fails_with(R"({"sentence": "a", "embeddings": {"a": [true]}})", "/embeddings/a/0: expected a number, found boolean true");
    fails_with(R"({"sentence": "a b c", "embeddings": [[1], [2]]})", "/embeddings: 2 vectors for 3 tokens");
    fails_with(R"({"tokens": ["a", ""], "embeddings": [[1], [2]]})", "/tokens/1: empty token");
    fails_with(R"({"tokens": "a b", "embeddings": [[1]]})", "/tokens: expected an array of strings, found string");
    fails_with(R"({"sentence": "a", "embeddings": "no"})", "/embeddings: expected an object word → vector, an array of vectors, or the name of a .npy file holding it, found the string \"no\"");
    fails_with(R"({"sentence": "a", "embedings": {"a": [1]}})", "/embedings: unknown field \"embedings\" (did you mean \"embeddings\"?");
    fails_with(R"({"sentence": "a", "embeddings": {"a": [1]}, "mode": "selff"})", "/mode: unknown mode \"selff\"");
    fails_with(R"({"sentence": "a", "embeddings": {"a": [1]}, "description": 3})", "/description: expected a string, found number 3");
}

TEST_CASE("weight shapes must fit d_in and each other", "[load][errors]") {
    const std::string head = R"({"tokens": ["a", "b"], "embeddings": [[1, 2, 3], [4, 5, 6]], "weights": )";
    const auto fails_with = [&](const std::string& weights, const std::string& fragment) {
        INFO(weights);
        REQUIRE_THROWS_WITH(load_problem(head + weights + "}", "in.json"), Contains(fragment));
    };
    fails_with(R"({"query": [[1, 0, 0], [0, 1, 0]], "key": [[1], [1], [1]], "value": [[1], [1], [1]]})",
               "/weights/query: shape 2×3 does not fit: expected 3×… (d_in × d_k, d_in = 3 from the embeddings)");
    fails_with(R"({"query": [[1, 0], [0, 1], [1, 1]], "key": [[1], [1], [1]], "value": [[1], [1], [1]]})",
               "/weights/key: shape 3×1 does not fit: expected 3×2 (d_in × d_k, like /weights/query");
    fails_with(R"({"query": [[1], [1], [1]], "key": [[1], [1], [1]], "value": [[1], [1]]})",
               "/weights/value: shape 2×1 does not fit: expected 3×…");
    fails_with(R"({"query": [[1], [1], [1]], "key": [[1], [1], [1]]})", "/weights: missing \"value\"");
    fails_with(R"({"query": [[1], [1, 2], [1]], "key": [[1], [1], [1]], "value": [[1], [1], [1]]})",
               "/weights/query/1 (row 2): vector of 2 numbers, expected 1 like the other 2 rows");
}

namespace {

// The message load_problem refuses `json` with, read as in.json ("" when it loads).
std::string refusal(const std::string& json) { return errors::message_of([&] { load_problem(json, "in.json"); }); }

}  // namespace

TEST_CASE("vectors of unequal length: the most common length is taken as right, and the others are named", "[load][errors]") {
    // The first vector is the odd one out: it is blamed, not the two after it.
    CHECK(refusal(R"({"sentence": "a b c", "embeddings": {"a": [1], "b": [1, 2], "c": [3, 4]}})") ==
          "in.json: /embeddings/a: vector of 1 number, expected 2 like the other 2 vectors");
    // In an array the row is named twice: by its JSON pointer, which counts from 0, and in
    // words, from 1.
    CHECK(refusal(R"({"tokens": ["a", "b", "c"], "embeddings": [[1], [1, 2], [3, 4]]})") ==
          "in.json: /embeddings/0 (row 1): vector of 1 number, expected 2 like the other 2 rows");
    CHECK(refusal(R"({"source": {"tokens": ["a", "b", "c"], "states": [[1, 2], [3, 4], [5, 6, 7]]},
                      "target": {"tokens": ["x"], "states": [[1]]}})") ==
          "in.json: /source/states/2 (row 3): vector of 3 numbers, expected 2 like the other 2 rows");
    // Several odd ones: 2 numbers is the most common length (a, c, e), though not half.
    CHECK(refusal(R"({"sentence": "a", "embeddings": {"a": [1, 2], "b": [1], "c": [3, 4], "d": [5], "e": [1, 2], "f": [1, 2, 3]}})") ==
          "in.json: /embeddings: the most common length is 2 numbers (3 of 6 vectors), and 3 vectors differ: "
          "\"b\" has 1, \"d\" has 1, \"f\" has 3");
    // A tie: no length can be taken as right, so each is named with the vectors that have it.
    CHECK(refusal(R"({"sentence": "a", "embeddings": {"a": [1, 2], "b": [1], "c": [3, 4], "d": [5]}})") ==
          "in.json: /embeddings: the vectors differ in length and no length is the most common, so none can be taken "
          "as right: 2 numbers in \"a\", \"c\"; 1 number in \"b\", \"d\"");
    // Long lists are cut: 30 rows of 2 numbers, then 20 of 1; eight of those are named.
    std::string rows;
    for (int r = 0; r < 50; ++r) rows += std::string(r ? ", " : "") + (r < 30 ? "[1, 2]" : "[1]");
    std::string named;
    for (int r = 31; r <= 38; ++r) named += "row " + std::to_string(r) + " has 1, ";
    CHECK(refusal(R"({"tokens": ["a"], "embeddings": [[1]], "weights": {"key": [[1]], "value": [[1]], "query": [)" + rows + "]}}") ==
          "in.json: /weights/query: the most common length is 2 numbers (30 of 50 rows), and 20 rows differ: " + named + "… (12 more)");
}

TEST_CASE("every unknown word of a sentence is named in one message", "[load][errors]") {
    const std::string lecture = R"("embeddings": {"Your": [1], "journey": [2], "starts": [3], "with": [4], "one": [5], "step": [6]})";
    // Each word with its closest known word (one edit away here).
    CHECK(refusal(R"({"sentence": "Your jurney strts with one stepp", )" + lecture + "}") ==
          "in.json: /sentence: 3 unknown words: /embeddings has no vector for \"jurney\" (token 2, closest known word: "
          "journey), \"strts\" (token 3, closest known word: starts), \"stepp\" (token 6, closest known word: step)");
    // A word that comes back is named once, at its first place: one unknown word.
    CHECK(refusal(R"({"sentence": "Your stepp with one stepp", )" + lecture + "}") ==
          "in.json: /sentence: unknown word \"stepp\" (token 2 of 5): /embeddings has no vector for it; closest known "
          "words: step, starts, one");
    // Tokens: the place is the array; each word says which token it is, counting from 1.
    CHECK(refusal(R"({"tokens": ["a", "zz", "yy", "zz"], "embeddings": {"a": [1], "zzz": [2]}})") ==
          "in.json: /tokens: 2 unknown words: /embeddings has no vector for \"zz\" (token 2, closest known word: zzz), "
          "\"yy\" (token 3, closest known word: a)");
    // Twelve unknown words: eight are named, then how many more.
    std::string sentence, named;
    for (int w = 1; w <= 12; ++w) sentence += " u" + std::to_string(w);
    for (int w = 1; w <= 8; ++w) named += "\"u" + std::to_string(w) + "\" (token " + std::to_string(w) + ", closest known word: a), ";
    CHECK(refusal(R"({"sentence": ")" + sentence + R"(", "embeddings": {"a": [1]}})") ==
          "in.json: /sentence: 12 unknown words: /embeddings has no vector for " + named + "… (4 more)");
}

TEST_CASE("field names learners try are pointed to the field they mean", "[load][errors]") {
    const std::string one = R"({"sentence": "a", "embeddings": {"a": [1]}, )";
    const std::string projections = " (known fields: query, key, value, output, query_bias, key_bias, value_bias, output_bias)";
    for (const std::string name : {"W_q", "Wq", "w_q", "WQ", "W_query", "Q", "q", "query_weights"}) {
        INFO(name);
        CHECK(refusal(one + R"("weights": {")" + name + R"(": [[1]]}})") ==
              "in.json: /weights/" + name + ": unknown field \"" + name + "\": the query projection W_q goes under \"query\"" + projections);
    }
    CHECK(refusal(one + R"("weights": {"query": [[1]], "W_K": [[1]]}})") ==
          "in.json: /weights/W_K: unknown field \"W_K\": the key projection W_k goes under \"key\"" + projections);
    CHECK(refusal(one + R"("weights": {"query": [[1]], "key": [[1]], "V": [[1]]}})") ==
          "in.json: /weights/V: unknown field \"V\": the value projection W_v goes under \"value\"" + projections);
    // A misspelling that is no alias still gets the closest field.
    CHECK(refusal(one + R"("weights": {"querry": [[1]]}})") ==
          "in.json: /weights/querry: unknown field \"querry\" (did you mean \"query\"? known fields: query, key, value, output, query_bias, key_bias, value_bias, output_bias)");

    const std::string top = " (known fields: description, mode, sentence, tokens, embeddings, weights, heads, kv_heads, padding, positions, source, target, layout, learned, rnn)";
    CHECK(refusal(one + R"("W_q": [[1]]})") ==
          "in.json: /W_q: unknown field \"W_q\": the query projection W_q goes inside \"weights\", under \"query\"" + top);
    CHECK(refusal(R"({"sentence": "a", "embedding": {"a": [1]}})") ==
          "in.json: /embedding: unknown field \"embedding\": the word vectors go under \"embeddings\"" + top);
    CHECK(refusal(R"({"words": ["a"], "embeddings": {"a": [1]}})") ==
          "in.json: /words: unknown field \"words\": the words go under \"sentence\" (one string) or \"tokens\" (an array of "
          "strings)" + top);
    CHECK(refusal(R"({"comment": "x", "sentence": "a", "embeddings": {"a": [1]}})") ==
          "in.json: /comment: unknown field \"comment\": a note for the learner goes under \"description\"" + top);

    // Bahdanau's weights, under the names of TensorFlow's tutorial (W1, W2, V) among others.
    const std::string pair = R"({"source": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["x"], "states": [[1]]}, )";
    const std::string alignment = " (known fields: W_a, U_a, v_a, W)";
    CHECK(refusal(pair + R"("weights": {"W1": [[1]], "U_a": [[1]], "v_a": [1]}})") ==
          "in.json: /weights/W1: unknown field \"W1\": the decoder-side weight W_a (s_t·W_a) goes under \"W_a\"" + alignment);
    CHECK(refusal(pair + R"("weights": {"W_a": [[1]], "W2": [[1]], "v_a": [1]}})") ==
          "in.json: /weights/W2: unknown field \"W2\": the encoder-side weight U_a (h_j·U_a) goes under \"U_a\"" + alignment);
    CHECK(refusal(pair + R"("weights": {"W_a": [[1]], "U_a": [[1]], "V": [1]}})") ==
          "in.json: /weights/V: unknown field \"V\": the vector v_a goes under \"v_a\"" + alignment);
    CHECK(refusal(R"({"encoder": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["x"], "states": [[1]]}})") ==
          "in.json: /encoder: unknown field \"encoder\": the encoder side (its tokens and states) goes under \"source\"" + top);
    CHECK(refusal(R"({"source": {"tokens": ["a"], "embeddings": [[1]]}, "target": {"tokens": ["x"], "states": [[1]]}})") ==
          "in.json: /source/embeddings: unknown field \"embeddings\": the encoder states h_j go under \"states\" (known fields: "
          "sentence, tokens, states, mask)");
    CHECK(refusal(R"({"source": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["x"], "states": [[1]], "mask": [true]}})") ==
          "in.json: /target/mask: unknown field \"mask\": a mask belongs in \"source\", where it hides encoder positions (known "
          "fields: sentence, tokens, states)");
}

TEST_CASE("an object of vectors alone is read as an object where no word table belongs", "[load][errors]") {
    // The parser packs {"v_a": [1]} as it packs embeddings; it was refused as "expected an
    // object, found an object".
    const std::string pair = R"({"source": {"tokens": ["a"], "states": [[1]]}, "target": {"tokens": ["x"], "states": [[1]]}, )";
    CHECK(refusal(pair + R"("weights": {"v_a": [1]}})") ==
          "in.json: /weights: missing \"W_a\": give all three of W_a, U_a, v_a (or none, to have them generated)");
    CHECK(refusal(pair + R"("weights": {"V": [1]}})") ==
          "in.json: /weights/V: unknown field \"V\": the vector v_a goes under \"v_a\" (known fields: W_a, U_a, v_a, W)");
    CHECK(refusal(R"({"embeddings": [1, 2]})") == "in.json: /: missing \"sentence\" (a string) or \"tokens\" (an array of strings)");
    CHECK(refusal(R"({"source": {"states": [1]}, "target": {"tokens": ["x"], "states": [[1]]}})") ==
          "in.json: /source: missing \"sentence\" (a string) or \"tokens\" (an array of strings)");
}

TEST_CASE("invalid JSON is located by line and column", "[load][errors]") {
    // Line 3 is `  "embeddings": {"a": [NaN]}`: the N is column 24.
    REQUIRE_THROWS_WITH(load_problem("{\n  \"sentence\": \"a\",\n  \"embeddings\": {\"a\": [NaN]}\n}", "in.json"),
                        Contains("in.json:3:24: invalid JSON"));
    // The out-of-range literal is found where it stands, not where its text first appears.
    REQUIRE_THROWS_WITH(load_problem("{\"description\": \"1e400\", \"sentence\": \"a\",\n\"embeddings\": {\"a\": [1e400]}}", "in.json"),
                        Contains("in.json:2:22: number out of range"));
    REQUIRE_THROWS_WITH(load_problem("{\"sentence\": \"a\",\n \"embeddings\": {\"a\": [1e400]}}", "in.json"),
                        Contains("in.json:2:23: number out of range: 1e400 does not fit a double"));
    REQUIRE_THROWS_WITH(load_problem("   \n", "in.json"), Contains("in.json: empty input"));
    REQUIRE_THROWS_WITH(load_problem(std::string(65, '[') + std::string(65, ']'), "in.json"),
                        Contains("in.json:1:65: JSON nested deeper than 64 levels"));
    REQUIRE_THROWS_WITH(load_problem("{\"sentence\": \"a\xff\"}", "in.json"),
                        Contains("in.json:1:") && Contains("ill-formed UTF-8"));
}

TEST_CASE("a file's mode must fit its shape", "[load][errors]") {
    const Problem bahdanau_sentence = load_problem(R"({"mode": "bahdanau", "sentence": "a", "embeddings": {"a": [1]}})", "in.json");
    REQUIRE_THROWS_WITH(resolve_mode(bahdanau_sentence, Mode::plain), Contains("/mode: mode bahdanau needs \"source\""));
    const Problem p = load_problem(R"({"mode": "causal", "sentence": "a", "embeddings": {"a": [1]}})", "in.json");
    CHECK(p.mode == Mode::causal);
}
