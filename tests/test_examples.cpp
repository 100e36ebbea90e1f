// The examples in data/: each loads, says what to look for, and shows what it says.
#include "attention/trace.hpp"
#include "input/examples.hpp"
#include "input/load.hpp"

#include "support/catch.hpp"

using namespace attntrace;

namespace {

Trace trace_example(std::string_view name, Mode mode = Mode::plain) {
    const Example* example = find_example(name);
    REQUIRE(example != nullptr);
    const Problem problem = load_problem(example->json, std::string(name));
    TraceOptions options;
    options.mode = resolve_mode(problem, mode == Mode::plain ? std::nullopt : std::optional(mode));
    return trace(problem, options);
}

Eigen::Index row_of(const Trace& t, const std::string& token) {
    const auto it = std::find(t.tokens.begin(), t.tokens.end(), token);
    REQUIRE(it != t.tokens.end());
    return it - t.tokens.begin();
}

// The token the row of `query` gives its largest weight to; `skip_self` looks past the query.
std::string strongest(const Trace& t, const std::string& query, bool skip_self = false) {
    const Stage& weights = *t.find(StageId::weights);
    const Eigen::Index row = row_of(t, query);
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < weights.data.cols(); ++j) {
        if (skip_self && j == row) continue;
        if (best < 0 || weights.data(row, j) > weights.data(row, best)) best = j;
    }
    return t.tokens[static_cast<std::size_t>(best)];
}

}  // namespace

TEST_CASE("every example loads, traces in every fitting mode and has a description", "[examples]") {
    REQUIRE(examples().size() >= 7);
    for (const auto& example : examples()) {
        INFO(example.name);
        const Problem problem = load_problem(example.json, std::string(example.name));
        CHECK_FALSE(problem.description.empty());
        const bool pair = std::holds_alternative<EncoderDecoderInput>(problem.input);
        for (const Mode mode : {Mode::plain, Mode::self, Mode::causal, Mode::bahdanau}) {
            if (pair != (mode == Mode::bahdanau)) continue;
            TraceOptions options;
            options.mode = mode;
            CHECK_NOTHROW(trace(problem, options));
        }
    }
}

TEST_CASE("the teacher who smiled: 'smiled' attends most to 'teacher'", "[examples]") {
    const Trace t = trace_example("teacher_smiled");
    CHECK(t.tokens.size() == 12);  // the full stop is dropped
    CHECK(t.tokens.front() == "The");
    CHECK(strongest(t, "smiled") == "teacher");
    // and more than to "students", the other person in the sentence.
    const Stage& w = *t.find(StageId::weights);
    CHECK(w.data(row_of(t, "smiled"), row_of(t, "teacher")) > w.data(row_of(t, "smiled"), row_of(t, "students")));
}

TEST_CASE("the book the student borrowed: 'fascinating' attends most to 'book'", "[examples]") {
    const Trace t = trace_example("book_borrowed");
    CHECK(strongest(t, "fascinating") == "book");
}

TEST_CASE("bank by the river and bank for money lean different ways", "[examples]") {
    const Trace river = trace_example("bank_river");
    const Trace money = trace_example("bank_money");
    CHECK(strongest(river, "bank", true) == "river");
    const std::string money_pick = strongest(money, "bank", true);
    CHECK((money_pick == "cash" || money_pick == "deposited"));
    // Context vectors: dimension 1 is money, dimension 2 is water.
    const auto bank_river = river.find(StageId::context)->data.row(row_of(river, "bank"));
    const auto bank_money = money.find(StageId::context)->data.row(row_of(money, "bank"));
    CHECK(bank_river(1) > bank_money(1));
    CHECK(bank_money(0) > bank_river(0));
}

TEST_CASE("big dream and big mistake give 'big' different context vectors", "[examples]") {
    const Trace dream = trace_example("big_dream");
    const Trace mistake = trace_example("big_mistake");
    const auto big_dream = dream.find(StageId::context)->data.row(row_of(dream, "big"));
    const auto big_mistake = mistake.find(StageId::context)->data.row(row_of(mistake, "big"));
    // Same embedding for "big" in both files, different neighbours: hope (dim 2) vs harm (dim 3).
    CHECK(dream.find(StageId::inputs)->data.row(row_of(dream, "big")) == mistake.find(StageId::inputs)->data.row(row_of(mistake, "big")));
    CHECK(big_dream(1) > big_mistake(1));
    CHECK(big_mistake(2) > big_dream(2));
}
