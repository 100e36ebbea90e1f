// The renderer of each format, one file each (render/<format>.cpp), which the table of
// render.cpp lists with the products each shows; and what the formats' renderers share: the
// writers of the products only the table and JSON formats show, one file a product
// (render/<product>_report.cpp), and the members of a query's summary that JSON and JSON Lines
// both write.
#pragma once

#include "render/render.hpp"

#include <ostream>

namespace attntrace {

class JsonWriter;
struct Quiz;

const Renderer& table_renderer();
const Renderer& json_renderer();
const Renderer& markdown_renderer();
const Renderer& csv_renderer();
const Renderer& jsonl_renderer();

// check-answers (render/answers_report.cpp): its text, and the members of its JSON document.
void write_answers_text(const AnswerReport& report, const RenderOptions& options, std::ostream& out);
void write_answers_json(JsonWriter& json, const AnswerReport& report);

// The quiz (render/quiz_report.cpp): its transcript, a step at a time, and the members of its
// JSON document, written when it has ended.
void write_quiz_text(const QuizEvent& event, const RenderOptions& options, std::ostream& out);
void write_quiz_json(JsonWriter& json, const Quiz& quiz);

// The streaming backward pass (render/gradients_report.cpp): its text in the table, markdown
// and CSV formats (its JSON is json.cpp's).
void write_gradients_table(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out);
void write_gradients_markdown(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out);
void write_gradients_csv(const StreamGradients& gradients, const RenderOptions& options, std::ostream& out);

// bench (render/bench_report.cpp): its table, and the members of its JSON document.
void write_bench_text(const BenchReport& report, std::ostream& out);
void write_bench_json(JsonWriter& json, const BenchReport& report);

// train (render/train_report.cpp): its table, and the members of its JSON document.
void write_training_text(const TrainReport& report, const RenderOptions& options, std::ostream& out);
void write_training_json(JsonWriter& json, const TrainReport& report);
// As JSON Lines: a line per point of the curve (attntrace.train-line/1), or with --compare-rnn a
// line per gap (attntrace.compare-rnn-line/1).
void write_training_lines(const TrainReport& report, std::ostream& out);

// rnn (render/rnn_report.cpp): the members of its JSON document (its tables: rnn_text_report).
void write_rnn_json(JsonWriter& json, const RnnReport& report);

// One query's strongest keys, largest weight and entropy ("top", "max_weight", "entropy"), as
// members of the object being written: a query of a JSON summary, or a JSON Lines line
// (render/json.cpp).
void write_query(JsonWriter& json, const Summary& summary, const QuerySummary& query);

}  // namespace attntrace
