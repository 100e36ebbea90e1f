#include "practice/quiz.hpp"

#include "attention/worked.hpp"
#include "practice/answers.hpp"
#include "practice/verdicts.hpp"
#include "util/utf8.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace attntrace {

std::string_view verdict_name(QuizVerdict v) {
    switch (v) {
    case QuizVerdict::right: return "right";
    case QuizVerdict::wrong: return "wrong";
    case QuizVerdict::skipped: return "skipped";
    case QuizVerdict::unanswered: return "unanswered";
    }
    return "";
}

QuizTally tally(const std::vector<QuizResult>& results) {
    QuizTally t;
    for (const QuizResult& r : results) {
        switch (r.verdict) {
        case QuizVerdict::right: ++t.right; break;
        case QuizVerdict::wrong: ++t.wrong; break;
        case QuizVerdict::skipped: ++t.skipped; break;
        case QuizVerdict::unanswered: ++t.unanswered; break;
        }
    }
    return t;
}

// The quiz's own names, apart from those of the other files of its unity group.
namespace quiz_detail {
namespace {

using Kind = QuestionKind;
using Answer = QuizAnswer;
using Verdict = QuizVerdict;
using Result = QuizResult;

std::string trimmed(std::string_view text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos) return {};
    const auto last = text.find_last_not_of(" \t\r\n");
    return std::string(text.substr(first, last - first + 1));
}

Answer read_answer(std::string_view line) {
    Answer a;
    a.text = trimmed(line);
    if (a.text.empty() || a.text == "?") return a;
    // A typographic minus (U+2212, three bytes) reads as '-'.
    std::string text;
    for (std::size_t from = 0;;) {
        const std::size_t at = a.text.find("\u2212", from);
        text.append(a.text, from, at == std::string::npos ? std::string::npos : at - from);
        if (at == std::string::npos) break;
        text += '-';
        from = at + 3;
    }
    const std::string lower = fold_case(text);
    if (lower == "-inf" || lower == "masked" || lower == "-\u221e") {
        a.form = Answer::Form::masked;
        return a;
    }
    if (!text.empty() && text.front() == '+') text.erase(0, 1);
    const bool digits = text.find_first_of("0123456789") != std::string::npos;
    const bool plain = text.find_first_not_of("0123456789.eE+-") == std::string::npos;
    const char* end = text.data() + text.size();
    auto [stop, error] = std::from_chars(text.data(), end, a.value);
    if (error == std::errc::result_out_of_range && stop == end && digits && plain) {
        // Beyond a double: too small is as good as 0 (or the nearest subnormal), too large is no number to grade.
        a.value = std::strtod(text.c_str(), nullptr);
        a.beyond_double = !std::isfinite(a.value);
        if (!a.beyond_double) error = std::errc();
    }
    if (!digits || !plain || error != std::errc() || stop != end || !std::isfinite(a.value)) {
        a.form = Answer::Form::unreadable;
        return a;
    }
    a.form = Answer::Form::number;
    a.decimals = decimals_of(text);
    return a;
}

// Does `a` (a number or a masked marker) give `value`? To its own precision, and, with fewer
// than least_decimals decimals, exactly (to the working precision). A masked marker gives −∞,
// and, among the weights, the 0 a hidden key gets.
bool gives(const Answer& a, double value, bool value_masked, StageId stage, Dtype dtype) {
    const bool hidden = value_masked || !std::isfinite(value);
    if (a.form == Answer::Form::masked) return hidden || (stage == StageId::weights && value == 0);
    if (a.form != Answer::Form::number || hidden) return false;
    const double gap = std::fabs(a.value - value);
    if (gap > tolerance_for(a.decimals, value, dtype)) return false;
    return a.decimals >= least_decimals || gap <= tolerance_for(std::numeric_limits<double>::max_digits10, value, dtype);
}

// The known mistakes that give the learner's number for this entry (none for a number no
// mistake gives: a hint is a claim about the number typed).
std::vector<Diagnosis> likely_mistakes(const Trace& trace, const Question& q, const Answer& a) {
    if (a.form != Answer::Form::number && a.form != Answer::Form::masked) return {};
    if (q.kind == Kind::feature)
        return diagnose_feature(trace, q.row, q.col, q.entry,
                                [&](double value) { return gives(a, value, false, StageId::scores, trace.dtype); });
    if (!diagnosable(q.stage)) return {};
    const auto entry = [&](const Matrix& m) {
        if (q.row >= m.rows() || (q.kind != Kind::row_sum && q.col >= m.cols())) return false;
        if (q.kind != Kind::row_sum) return gives(a, m(q.row, q.col), false, q.stage, trace.dtype);
        double sum = 0;
        for (Eigen::Index j = 0; j < m.cols(); ++j)
            if (std::isfinite(m(q.row, j))) sum += m(q.row, j);
        return gives(a, sum, false, q.stage, trace.dtype);
    };
    MistakeContext context;
    context.row = q.row;  // the figures a hint quotes are those of the asked row
    return diagnose(trace, q.stage, q.head, entry, context);
}

// The arithmetic of the asked entry: the worked example of its row, or of its vector.
void work_out(const Trace& trace, const Question& q, Result& r) {
    if (q.kind == Kind::projection) r.worked_projection = work_projection(trace, q.stage, q.row, q.head);
    else r.worked = work_through(trace, q.row, std::max(q.head, 1));
}

Result grade(const Trace& trace, const Question& q, const Answer& a) {
    Result r;
    r.answer = a;
    if (a.form == Answer::Form::skip) {
        r.verdict = Verdict::skipped;
        work_out(trace, q, r);
        return r;
    }
    if (gives(a, q.expected, q.expected_masked, q.stage, trace.dtype)) {
        r.verdict = Verdict::right;
        return r;
    }
    r.verdict = Verdict::wrong;
    r.too_coarse = a.form == Answer::Form::number && !q.expected_masked &&
                   std::fabs(a.value - q.expected) <= tolerance_for(a.decimals, q.expected, trace.dtype);
    if (!r.too_coarse) r.mistakes = likely_mistakes(trace, q, a);
    work_out(trace, q, r);
    return r;
}

}  // namespace
}  // namespace quiz_detail

QuizAnswer read_answer(std::string_view line) { return quiz_detail::read_answer(line); }

QuizResult grade(const Trace& trace, const Question& q, const QuizAnswer& a) { return quiz_detail::grade(trace, q, a); }

}  // namespace attntrace
