#include "input/tasks.hpp"

#include "core/error.hpp"
#include "core/generator.hpp"
#include "input/aliases.hpp"
#include "input/json_text.hpp"
#include "input/reader.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace attntrace {
namespace {

// who_did_it's words by what they are. A word's vector has one number per feature, 1 where the
// word has it (0.5 for a function word), and its own shade in the last number, so that no two
// words are the same vector:
//   person · plural · thing · action · verb (a finished verb, the query) · function · describing · shade
constexpr int feature_count = 8;
enum Feature { person, plural, thing, action, verb, function, describing, shade };

struct WordClass {
    std::vector<Feature> features;
    std::vector<std::string_view> words;
};
const std::vector<WordClass>& word_classes() {
    static const std::vector<WordClass> classes{
        {{person}, {"teacher", "doctor", "pilot", "farmer", "girl", "boy", "artist", "nurse", "chef", "writer"}},
        {{person, plural}, {"students", "children", "parents", "players", "workers", "friends"}},
        {{thing}, {"concept", "book", "letter", "song", "problem", "car", "garden", "picture", "story", "lesson"}},
        {{thing, plural}, {"books", "letters", "songs", "problems", "pictures"}},
        {{action}, {"teaching", "reading", "writing", "explaining", "fixing", "painting", "helping", "watching"}},
        {{describing}, {"difficult", "old", "new", "long", "small", "strange", "quietly", "again"}},
        {{function}, {"the", "a", "to", "who", "was", "of", "with", "for"}},
        {{verb}, {"smiled", "laughed", "left", "slept", "cried", "won", "waved"}},
    };
    return classes;
}

struct Vocab {
    std::map<std::string, Vector, std::less<>> vectors;
    const std::vector<std::string_view>& of(std::size_t klass) const { return word_classes()[klass].words; }
};

// The vectors of who_did_it's words: the same for every seed (the task's words do not change).
const Vocab& vocabulary() {
    static const Vocab vocab = [] {
        Vocab v;
        SplitMix64 shades(0x5EED5);
        for (const WordClass& c : word_classes())
            for (const auto word : c.words) {
                Vector x = Vector::Zero(feature_count);
                for (const Feature f : c.features) x(f) = f == function ? 0.5 : 1.0;
                x(shade) = shades.symmetric(0.5);
                v.vectors.emplace(std::string(word), x);
            }
        return v;
    }();
    return vocab;
}

std::string_view pick(SplitMix64& rng, const std::vector<std::string_view>& words) {
    return words[rng.next() % words.size()];
}

enum Class : std::size_t { subjects, people, things, plural_things, actions, describing_words, functions, verbs };

// The words between the subject and the verb: exactly `count` of them, a relative clause
// ("who was teaching …") when there is room, then phrases that name other things and people,
// none of them one person (the subject is the only one).
std::vector<std::string> middle(SplitMix64& rng, std::size_t count) {
    const Vocab& v = vocabulary();
    std::vector<std::string> words;
    const auto add = [&](std::initializer_list<std::string_view> phrase) {
        for (const auto w : phrase) words.emplace_back(w);
    };
    if (count >= 3) add({"who", "was", pick(rng, v.of(actions))});
    while (words.size() < count) {
        const std::size_t room = count - words.size();
        const std::uint64_t kind = rng.next() % (room >= 3 ? 5 : room == 2 ? 2 : 1);
        switch (kind) {
        case 0: add({pick(rng, v.of(describing_words))}); break;
        case 1: add({"the", pick(rng, rng.next() % 2 ? v.of(people) : v.of(plural_things))}); break;
        case 2: add({"a", pick(rng, v.of(describing_words)), pick(rng, v.of(things))}); break;
        case 3: add({"to", "the", pick(rng, v.of(people))}); break;
        default: add({rng.next() % 2 ? "of" : "with", "the", pick(rng, v.of(things))}); break;
        }
    }
    return words;
}

TrainingExample sentence_example(const std::vector<std::string>& tokens, Eigen::Index subject) {
    TrainingExample e;
    e.tokens = tokens;
    e.inputs.resize(static_cast<Eigen::Index>(tokens.size()), feature_count);
    for (std::size_t i = 0; i < tokens.size(); ++i)
        e.inputs.row(static_cast<Eigen::Index>(i)) = vocabulary().vectors.find(tokens[i])->second;
    e.focus = TrainingExample::Focus{static_cast<Eigen::Index>(tokens.size()) - 1, subject};
    return e;
}

// `gap`: every sentence's verb that many words after its subject (0: 1 to 32, drawn).
TrainingSet who_did_it(std::uint64_t seed, std::size_t count, std::size_t held_out, std::size_t fixed_gap = 0) {
    TrainingSet set;
    set.task = "who_did_it";
    set.description = fixed_gap > 0 ? fmt::format("the last word, a verb, should put its weight on its subject, {} "
                                                  "words back",
                                                  fixed_gap)
                                    : "the last word, a verb, should put its weight on its subject, 1 to 32 words back";
    set.d_in = feature_count;
    SplitMix64 rng(seed);
    const Vocab& v = vocabulary();
    for (std::size_t i = 0; i < count; ++i) {
        const std::size_t gap = fixed_gap > 0 ? fixed_gap : 1 + rng.next() % 32;  // the verb's position minus the subject's
        std::vector<std::string> tokens{"the", std::string(pick(rng, v.of(subjects)))};
        for (auto& w : middle(rng, gap - 1)) tokens.push_back(std::move(w));
        tokens.emplace_back(pick(rng, v.of(verbs)));
        (i < count - held_out ? set.train : set.held_out).push_back(sentence_example(tokens, 1));
    }
    set.shown = sentence_example({"the", "teacher", "who", "was", "teaching", "a", "difficult", "concept", "to", "the",
                                  "students", "smiled"},
                                 1);
    return set;
}

// recall's vectors: a key's one-hot part (8 keys, a … h), a value's part (10 values, 0 … 9, 4
// numbers each, drawn once) and a last number, 1 for the query.
constexpr int recall_keys = 8, recall_value_width = 4;
constexpr int recall_width = recall_keys + recall_value_width + 1;

const Matrix& recall_values() {
    static const Matrix values = [] {
        SplitMix64 rng(0xA11CE);
        return random_matrix(rng, 10, recall_value_width, 1.0);
    }();
    return values;
}

TrainingExample recall_example(SplitMix64& rng) {
    std::vector<int> keys(recall_keys);
    for (int k = 0; k < recall_keys; ++k) keys[static_cast<std::size_t>(k)] = k;
    for (std::size_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[rng.next() % i]);
    const std::size_t pairs = 2 + rng.next() % (recall_keys - 1);
    TrainingExample e;
    std::vector<Vector> rows;
    std::vector<Eigen::Index> pair_at;
    for (std::size_t p = 0; p < pairs; ++p) {
        for (std::uint64_t f = rng.next() % 4; f > 0; --f) {  // 0 to 3 fillers before each pair
            e.tokens.emplace_back("·");
            rows.push_back(Vector::Zero(recall_width));
        }
        const int key = keys[p];
        const auto value = static_cast<Eigen::Index>(rng.next() % 10);
        e.tokens.push_back(fmt::format("{}={}", static_cast<char>('a' + key), value));
        Vector x = Vector::Zero(recall_width);
        x(key) = 1;
        x.segment(recall_keys, recall_value_width) = recall_values().row(value);
        pair_at.push_back(static_cast<Eigen::Index>(rows.size()));
        rows.push_back(x);
    }
    const std::size_t asked = rng.next() % pairs;
    e.tokens.push_back(fmt::format("{}?", static_cast<char>('a' + keys[asked])));
    Vector q = Vector::Zero(recall_width);
    q(keys[asked]) = 1;
    q(recall_width - 1) = 1;
    rows.push_back(q);
    e.inputs.resize(static_cast<Eigen::Index>(rows.size()), recall_width);
    for (std::size_t i = 0; i < rows.size(); ++i) e.inputs.row(static_cast<Eigen::Index>(i)) = rows[i];
    e.focus = TrainingExample::Focus{static_cast<Eigen::Index>(rows.size()) - 1, pair_at[asked]};
    return e;
}

TrainingSet recall(std::uint64_t seed, std::size_t count, std::size_t held_out) {
    TrainingSet set;
    set.task = "recall";
    set.description = "the query \"c?\" should put its weight on the pair \"c=…\" with its key, wherever it stands";
    set.d_in = recall_width;
    SplitMix64 rng(seed);
    for (std::size_t i = 0; i < count; ++i)
        (i < count - held_out ? set.train : set.held_out).push_back(recall_example(rng));
    if (!set.held_out.empty()) set.shown = set.held_out.front();
    return set;
}

// A focus's query or key: a 1-based position, or a token spelled as in "tokens", once there.
Eigen::Index position_in(const Reader& in, const Json& value, const std::string& pointer,
                         const std::vector<std::string>& tokens) {
    if (value.is_string()) {
        const std::string token = in.string(value, pointer);
        const auto count = std::count(tokens.begin(), tokens.end(), token);
        if (count == 0) in.fail(pointer, fmt::format("\"{}\" is not one of this line's tokens", printable(token)));
        if (count > 1)
            in.fail(pointer, fmt::format("\"{}\" is {} of this line's tokens: give its 1-based position instead",
                                         printable(token), count));
        return std::find(tokens.begin(), tokens.end(), token) - tokens.begin();
    }
    const double x = in.number(value, pointer);
    if (x != std::floor(x) || x < 1 || x > static_cast<double>(tokens.size()))
        in.fail(pointer, fmt::format("expected a token or its 1-based position, 1 to {}, found {}", tokens.size(), x));
    return static_cast<Eigen::Index>(x) - 1;
}

std::vector<std::string> tokens_of(const Reader& in, const Json& value) {
    std::vector<std::string> tokens;
    if (is_packed_strings(value)) {
        const PackedStrings packed = packed_strings(value);
        for (std::size_t i = 0; i < packed.count; ++i) tokens.emplace_back(packed[i]);
    } else {
        if (!value.is_array() || value.empty()) in.fail("/tokens", "expected an array of strings, found " + describe(value));
        for (std::size_t i = 0; i < value.size(); ++i) tokens.push_back(in.string(value[i], pointer_child("/tokens", i)));
    }
    return tokens;
}

TrainingExample line_example(const Reader& in, const Json& doc, TrainingSet& set) {
    in.require_object(doc, "");
    in.only_keys(doc, "", {"tokens", "embeddings", "focus", "target"}, Aliases{});
    for (const char* key : {"tokens", "embeddings"})
        if (!doc.contains(key)) in.fail("", fmt::format("missing \"{}\"", key));
    if (doc.contains("focus") == doc.contains("target"))
        in.fail("", "give one of \"focus\" ({\"query\": …, \"key\": …}) or \"target\" (a row per token)");
    TrainingExample e;
    e.tokens = tokens_of(in, doc["tokens"]);
    e.inputs = in.matrix(doc["embeddings"], "/embeddings");
    const auto n = static_cast<Eigen::Index>(e.tokens.size());
    if (e.inputs.rows() != n)
        in.fail("/embeddings", fmt::format("{} rows, expected {} (one per token)", e.inputs.rows(), n));
    if (set.d_in == 0) set.d_in = e.inputs.cols();
    if (e.inputs.cols() != set.d_in)
        in.fail("/embeddings", fmt::format("rows of {} numbers, expected {} as in the first line", e.inputs.cols(), set.d_in));
    if (doc.contains("focus")) {
        const Json& f = in.require_object(doc["focus"], "/focus");
        in.only_keys(f, "/focus", {"query", "key"}, Aliases{});
        for (const char* key : {"query", "key"})
            if (!f.contains(key)) in.fail("/focus", fmt::format("missing \"{}\"", key));
        e.focus = TrainingExample::Focus{position_in(in, f["query"], "/focus/query", e.tokens),
                                         position_in(in, f["key"], "/focus/key", e.tokens)};
    } else {
        Matrix t = in.matrix(doc["target"], "/target");
        if (t.rows() != n) in.fail("/target", fmt::format("{} rows, expected {} (one per token)", t.rows(), n));
        if (set.target_width == 0) set.target_width = t.cols();
        if (t.cols() != set.target_width)
            in.fail("/target", fmt::format("rows of {} numbers, expected {} as in the first target", t.cols(),
                                           set.target_width));
        e.target = std::move(t);
    }
    return e;
}

}  // namespace

std::vector<std::string> built_in_tasks() { return {"who_did_it", "recall"}; }

TrainingSet who_did_it_at_gap(std::uint64_t seed, std::size_t count, std::size_t held_out, std::size_t gap) {
    return who_did_it(seed, count, held_out, gap);
}

std::vector<std::string> who_did_it_subjects() {
    const auto& words = word_classes()[subjects].words;
    return {words.begin(), words.end()};
}

TrainingSet built_in_task(std::string_view name, std::uint64_t seed, std::size_t count, std::size_t held_out) {
    if (name == "who_did_it") return who_did_it(seed, count, held_out);
    if (name == "recall") return recall(seed, count, held_out);
    throw UsageError(fmt::format("no built-in task \"{}\" (expected who_did_it, recall, or a file of examples)",
                                 printable(name)));
}

TrainingSet read_task_lines(std::string_view text, const std::string& origin, double held_out_fraction) {
    TrainingSet set;
    set.task = origin;
    set.description = "the examples of " + origin;
    std::vector<TrainingExample> examples;
    std::size_t line = 0;
    for (std::size_t begin = 0; begin < text.size();) {
        const std::size_t end = std::min(text.find('\n', begin), text.size());
        const std::string_view body = text.substr(begin, end - begin);
        ++line;
        begin = end + 1;
        if (body.find_first_not_of(" \t\r") == std::string_view::npos) continue;
        const std::string where = fmt::format("{}:{}", origin, line);
        Json doc = parse_json(body, where);
        Reader in(where, nullptr);
        examples.push_back(line_example(in, doc, set));
    }
    if (examples.empty()) throw DataError(fmt::format("{}: no examples: one JSON object a line", origin));
    const auto held = static_cast<std::size_t>(held_out_fraction * static_cast<double>(examples.size()));
    for (std::size_t i = 0; i < examples.size(); ++i)
        (i < examples.size() - held ? set.train : set.held_out).push_back(std::move(examples[i]));
    for (const auto* part : {&set.held_out, &set.train})
        for (const auto& e : *part)
            if (e.focus && !set.shown) set.shown = e;
    return set;
}

}  // namespace attntrace
