#include "attention/training.hpp"

#include "attention/optimizer.hpp"

#include "core/error.hpp"
#include "core/generator.hpp"
#include "util/parallel.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>

namespace attntrace {
namespace {

template <typename T>
using Mat = MatrixT<T>;
template <typename T>
using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;

// Where each parameter sits in one flat array (the optimizer's view): W_q, W_k, W_v by rows,
// then b_q, b_k, b_v when the layer has biases, then the embedding table (a row per word) when
// the embeddings are learned.
struct Layout {
    Eigen::Index d_in = 0, d_k = 0, d_v = 0;
    bool bias = false;
    Eigen::Index words = 0;  // rows of the embedding table (0: the inputs are fixed)

    Eigen::Index w_q() const { return 0; }
    Eigen::Index w_k() const { return d_in * d_k; }
    Eigen::Index w_v() const { return 2 * d_in * d_k; }
    Eigen::Index b_q() const { return d_in * (2 * d_k + d_v); }
    Eigen::Index b_k() const { return b_q() + d_k; }
    Eigen::Index b_v() const { return b_k() + d_k; }
    Eigen::Index embedding() const { return b_q() + (bias ? 2 * d_k + d_v : 0); }
    Eigen::Index size() const { return embedding() + words * d_in; }
};

Layout layout_of(const Projections& p) {
    return {p.query.rows(), p.query.cols(), p.value.cols(), p.query_bias.has_value()};
}

template <typename T>
std::vector<T> flatten(const Projections& p, const Layout& l) {
    std::vector<T> flat(static_cast<std::size_t>(l.size()));
    const auto put = [&](const Matrix& m, Eigen::Index at) {
        Eigen::Map<Mat<T>>(flat.data() + at, m.rows(), m.cols()) = m.cast<T>();
    };
    put(p.query, l.w_q()), put(p.key, l.w_k()), put(p.value, l.w_v());
    if (l.bias) put(*p.query_bias, l.b_q()), put(*p.key_bias, l.b_k()), put(*p.value_bias, l.b_v());
    return flat;
}

template <typename T>
Projections unflatten(const std::vector<T>& flat, const Layout& l) {
    const auto get = [&](Eigen::Index at, Eigen::Index rows, Eigen::Index cols) -> Matrix {
        return Eigen::Map<const Mat<T>>(flat.data() + at, rows, cols).template cast<double>();
    };
    Projections p;
    p.query = get(l.w_q(), l.d_in, l.d_k), p.key = get(l.w_k(), l.d_in, l.d_k), p.value = get(l.w_v(), l.d_in, l.d_v);
    if (l.bias) {
        p.query_bias = get(l.b_q(), 1, l.d_k), p.key_bias = get(l.b_k(), 1, l.d_k);
        p.value_bias = get(l.b_v(), 1, l.d_v);
    }
    return p;
}

// The parameters as matrices over a flat array (const or not).
template <typename T, typename Pointer>
struct Views {
    using M = std::conditional_t<std::is_const_v<std::remove_pointer_t<Pointer>>, Eigen::Map<const Mat<T>>,
                                 Eigen::Map<Mat<T>>>;
    M W_q, W_k, W_v, b_q, b_k, b_v;
    Views(Pointer p, const Layout& l)
        : W_q(p + l.w_q(), l.d_in, l.d_k), W_k(p + l.w_k(), l.d_in, l.d_k), W_v(p + l.w_v(), l.d_in, l.d_v),
          b_q(p + (l.bias ? l.b_q() : 0), 1, l.bias ? l.d_k : 0), b_k(p + (l.bias ? l.b_k() : 0), 1, l.bias ? l.d_k : 0),
          b_v(p + (l.bias ? l.b_v() : 0), 1, l.bias ? l.d_v : 0) {}
};

// Row i's softmax over its first `visible` scores, into `a` (the rest 0); returns logsumexp.
template <typename T>
T softmax_row(const Row<T>& s, Eigen::Index visible, Row<T>& a) {
    const T top = s.head(visible).maxCoeff();
    a.setZero(s.size());
    a.head(visible) = (s.head(visible).array() - top).exp().matrix();
    const T total = a.head(visible).sum();
    a.head(visible) /= total;
    return top + std::log(total);
}

// A focus example: only the query's row of the scores is needed. With `dX`, the gradient of
// the inputs is added there too.
template <typename T>
double focus_pass(const Layout& l, const T* p, const Mat<T>& X, const TrainingExample::Focus& f, bool causal,
                  T* g, Row<T>* weights, Mat<T>* dX = nullptr) {
    const Views<T, const T*> w(p, l);
    const T scale = std::sqrt(static_cast<T>(l.d_k));
    Mat<T> K = X * w.W_k;
    Row<T> q = X.row(f.query) * w.W_q;
    if (l.bias) K.rowwise() += Row<T>(w.b_k), q += w.b_q;
    const Row<T> s = (K * q.transpose()).transpose() / scale;
    const Eigen::Index visible = causal ? f.query + 1 : X.rows();
    Row<T> a;
    const T lse = softmax_row<T>(s, visible, a);
    if (weights) *weights = a;
    if (g) {
        Views<T, T*> d(g, l);
        Row<T> ds = a;
        ds(f.key) -= T(1);
        ds /= scale;
        const Row<T> dq = ds * K;
        const Mat<T> dK = ds.transpose() * q;
        d.W_q += X.row(f.query).transpose() * dq;
        d.W_k += X.transpose() * dK;
        if (l.bias) d.b_q += dq, d.b_k += dK.colwise().sum();
        if (dX) *dX += dK * w.W_k.transpose(), dX->row(f.query) += dq * w.W_q.transpose();
    }
    return static_cast<double>(lse - s(f.key));
}

// A target example: the whole layer, forward and back.
template <typename T>
double target_pass(const Layout& l, const T* p, const Mat<T>& X, const Matrix& target, bool causal, T* g,
                   Mat<T>* dX = nullptr) {
    const Views<T, const T*> w(p, l);
    const T scale = std::sqrt(static_cast<T>(l.d_k));
    Mat<T> Q = X * w.W_q, K = X * w.W_k, V = X * w.W_v;
    if (l.bias) Q.rowwise() += Row<T>(w.b_q), K.rowwise() += Row<T>(w.b_k), V.rowwise() += Row<T>(w.b_v);
    const Mat<T> S = Q * K.transpose() / scale;
    const Eigen::Index n = X.rows();
    Mat<T> A(n, n);
    Row<T> a;
    for (Eigen::Index i = 0; i < n; ++i) {
        (void)softmax_row<T>(S.row(i), causal ? i + 1 : n, a);
        A.row(i) = a;
    }
    const Mat<T> dZ = A * V - target.cast<T>();
    const double loss = 0.5 * dZ.template cast<double>().squaredNorm();
    if (g) {
        Views<T, T*> d(g, l);
        const Mat<T> dA = dZ * V.transpose();
        const Mat<T> dV = A.transpose() * dZ;
        const Eigen::Matrix<T, Eigen::Dynamic, 1> along = (dA.array() * A.array()).rowwise().sum();
        const Mat<T> dS = (A.array() * (dA.array().colwise() - along.array())).matrix() / scale;
        const Mat<T> dQ = dS * K, dK = dS.transpose() * Q;
        d.W_q += X.transpose() * dQ, d.W_k += X.transpose() * dK, d.W_v += X.transpose() * dV;
        if (l.bias) d.b_q += dQ.colwise().sum(), d.b_k += dK.colwise().sum(), d.b_v += dV.colwise().sum();
        if (dX) *dX += dQ * w.W_q.transpose() + dK * w.W_k.transpose() + dV * w.W_v.transpose();
    }
    return loss;
}

// An example's loss, and its gradient added into `g` when given. A focus example with a
// target too is judged by both: the sum of the two losses.
template <typename T>
double example_pass(const Layout& l, const T* p, const Mat<T>& X, const TrainingExample& ex, bool causal, T* g,
                    Mat<T>* dX = nullptr) {
    double loss = 0;
    if (ex.focus) loss += focus_pass<T>(l, p, X, *ex.focus, causal, g, nullptr, dX);
    if (ex.target) loss += target_pass<T>(l, p, X, *ex.target, causal, g, dX);
    return loss;
}

// The examples with their inputs in the working precision, once; with learned embeddings,
// each token's row of the table (`ids`) instead.
template <typename T>
struct Prepared {
    const TrainingExample* example;
    Mat<T> X;
    std::vector<Eigen::Index> ids;
};
template <typename T>
std::vector<Prepared<T>> prepare(const std::vector<TrainingExample>& examples, const WordTable* words = nullptr) {
    std::vector<Prepared<T>> out;
    out.reserve(examples.size());
    for (const auto& e : examples) {
        out.push_back({&e, e.inputs.cast<T>(), {}});
        if (words)
            for (const auto& t : e.tokens) out.back().ids.push_back(words->index.at(t));
    }
    return out;
}

// An example's inputs under `p`: its own, or its tokens' rows of the embedding table.
template <typename T>
const Mat<T>& inputs_of(const Prepared<T>& e, const Layout& l, const T* p, Mat<T>& scratch) {
    if (l.words == 0) return e.X;
    const Eigen::Map<const Mat<T>> table(p + l.embedding(), l.words, l.d_in);
    scratch.resize(static_cast<Eigen::Index>(e.ids.size()), l.d_in);
    for (std::size_t i = 0; i < e.ids.size(); ++i) scratch.row(static_cast<Eigen::Index>(i)) = table.row(e.ids[i]);
    return scratch;
}

// The arithmetic of one example, for worth_threads.
template <typename T>
double operations(const Prepared<T>& e, const Layout& l) {
    const double n = static_cast<double>(e.X.rows());
    return n * l.d_in * (2 * l.d_k + l.d_v) * 2 + n * n * (l.d_k + l.d_v) * 4;
}

// The mean loss of `items` (indices into `examples`) and, with `gradient`, its mean gradient.
// Each example's gradient is made in its own buffer and the buffers are added in the items'
// order, so the sum is the same bytes for any thread count.
template <typename T>
double mean_pass(const Layout& l, const std::vector<T>& params, const std::vector<Prepared<T>>& examples,
                 const std::vector<std::size_t>& items, bool causal, std::vector<T>* gradient) {
    const std::size_t count = items.size();
    const auto size = static_cast<std::size_t>(l.size());
    std::vector<double> losses(count, 0.0);
    std::vector<T> parts(gradient ? count * size : 0, T(0));
    double work = 0;
    for (const std::size_t i : items) work += operations(examples[i], l);
    RegionErrors errors;
#pragma omp parallel for schedule(static) if (worth_threads(work))
    for (std::size_t b = 0; b < count; ++b)
        errors.run([&] {
            const Prepared<T>& e = examples[items[b]];
            Mat<T> scratch;
            const Mat<T>& X = inputs_of(e, l, params.data(), scratch);
            T* g = gradient ? parts.data() + b * size : nullptr;
            if (!g || l.words == 0) {
                losses[b] = example_pass<T>(l, params.data(), X, *e.example, causal, g);
                return;
            }
            Mat<T> dX = Mat<T>::Zero(X.rows(), X.cols());  // scattered into the table's rows
            losses[b] = example_pass<T>(l, params.data(), X, *e.example, causal, g, &dX);
            Eigen::Map<Mat<T>> table(g + l.embedding(), l.words, l.d_in);
            for (std::size_t i = 0; i < e.ids.size(); ++i) table.row(e.ids[i]) += dX.row(static_cast<Eigen::Index>(i));
        });
    errors.rethrow();
    double total = 0;
    for (const double x : losses) total += x;
    if (gradient) {
        gradient->assign(size, T(0));
        for (std::size_t b = 0; b < count; ++b)
            for (std::size_t k = 0; k < size; ++k) (*gradient)[k] += parts[b * size + k];
        for (T& x : *gradient) x /= static_cast<T>(count);
    }
    return total / static_cast<double>(count);
}

std::vector<std::size_t> all_of(std::size_t count) {
    std::vector<std::size_t> items(count);
    std::iota(items.begin(), items.end(), std::size_t{0});
    return items;
}

// The point of the curve under `params`.
template <typename T>
CurvePoint evaluate(std::int64_t step, const Layout& l, const std::vector<T>& params, const std::vector<Prepared<T>>& train,
                    const std::vector<Prepared<T>>& held, const std::vector<Prepared<T>>& shown, bool causal) {
    CurvePoint point;
    point.step = step;
    point.loss = mean_pass<T>(l, params, train, all_of(train.size()), causal, nullptr);
    if (!held.empty()) point.held_out_loss = mean_pass<T>(l, params, held, all_of(held.size()), causal, nullptr);
    std::size_t asked = 0, right = 0;
    Row<T> a;
    Mat<T> scratch;
    for (const Prepared<T>& e : held) {
        if (!e.example->focus) continue;
        (void)focus_pass<T>(l, params.data(), inputs_of(e, l, params.data(), scratch), *e.example->focus, causal, nullptr, &a);
        Eigen::Index top = 0;
        a.maxCoeff(&top);
        ++asked;
        right += top == e.example->focus->key;
    }
    if (asked > 0) point.accuracy = static_cast<double>(right) / static_cast<double>(asked);
    if (!shown.empty() && shown.front().example->focus) {
        const Prepared<T>& e = shown.front();
        (void)focus_pass<T>(l, params.data(), inputs_of(e, l, params.data(), scratch), *e.example->focus, causal, nullptr, &a);
        point.focus = static_cast<double>(a(e.example->focus->key));
    }
    return point;
}

// --embeddings: a row per word, as spelled, from its first use; a word used with two vectors
// cannot share one.
WordTable word_table(const TrainingSet& set) {
    WordTable table;
    std::vector<Vector> rows;
    const std::vector<TrainingExample> shown = set.shown ? std::vector{*set.shown} : std::vector<TrainingExample>{};  // its words too
    for (const auto* part : {&set.train, &set.held_out, &shown})
        for (const TrainingExample& e : *part)
            for (std::size_t i = 0; i < e.tokens.size(); ++i) {
                const Vector x = e.inputs.row(static_cast<Eigen::Index>(i));
                const auto [at, added] = table.index.emplace(e.tokens[i], static_cast<Eigen::Index>(rows.size()));
                if (added) {
                    table.words.push_back(e.tokens[i]), rows.push_back(x);
                } else if (rows[static_cast<std::size_t>(at->second)] != x) {
                    throw DataError(fmt::format("{}: \"{}\" comes with two different vectors, and --embeddings learns one "
                                                "vector per word",
                                                set.task, e.tokens[i]));
                }
            }
    table.vectors.resize(static_cast<Eigen::Index>(rows.size()), set.d_in);
    for (std::size_t r = 0; r < rows.size(); ++r) table.vectors.row(static_cast<Eigen::Index>(r)) = rows[r];
    return table;
}

template <typename T>
Training train_in(const TrainingSet& set, const TrainSettings& settings, const Projections& start,
                  const StepObserver& observe) {
    Layout l = layout_of(start);
    std::optional<WordTable> table;
    if (settings.embeddings) table = word_table(set), l.words = table->vectors.rows();
    std::vector<T> params = flatten<T>(start, l), gradient;
    if (table)
        Eigen::Map<Mat<T>>(params.data() + l.embedding(), l.words, l.d_in) = table->vectors.cast<T>();
    const WordTable* words = table ? &*table : nullptr;
    std::vector<TrainingExample> followed;  // the example the report follows, prepared as the others
    if (set.shown && (!table || std::all_of(set.shown->tokens.begin(), set.shown->tokens.end(),
                                            [&](const std::string& t) { return table->index.count(t) > 0; })))
        followed.push_back(*set.shown);
    const auto train = prepare<T>(set.train, words), held = prepare<T>(set.held_out, words);
    const auto shown = prepare<T>(followed, words);
    const std::int64_t every = settings.every > 0 ? settings.every : std::max<std::int64_t>(1, settings.steps / 10);
    Training out;
    out.initial = start;
    out.curve.push_back(evaluate<T>(0, l, params, train, held, shown, settings.causal));
    if (settings.snapshots > 0) out.snapshots.emplace_back(0, start);
    if (observe) observe(0, &out.curve.back());
    Order order(train.size(), settings.seed);
    Updater<T> updater{settings, {}, {}, 0};
    const auto batch = static_cast<std::size_t>(settings.batch);
    double seconds = 0;
    for (std::int64_t step = 1; step <= settings.steps; ++step) {
        const auto began = std::chrono::steady_clock::now();
        (void)mean_pass<T>(l, params, train, order.next(batch), settings.causal, &gradient);
        updater.step(params, gradient);
        seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
        if (!std::all_of(params.begin(), params.end(), [](T x) { return std::isfinite(x); }))
            throw DataError(fmt::format("step {}: the weights are no longer finite numbers (the learning rate {} is too "
                                        "large for this task: try a smaller --lr)",
                                        step, settings.lr));
        const bool record = step % every == 0 || step == settings.steps;
        if (record) out.curve.push_back(evaluate<T>(step, l, params, train, held, shown, settings.causal));
        if (settings.snapshots > 0 && step % settings.snapshots == 0) out.snapshots.emplace_back(step, unflatten<T>(params, l));
        if (observe) observe(step, record ? &out.curve.back() : nullptr);
    }
    out.learned = unflatten<T>(params, l);
    if (table) {
        out.embeddings = *table;
        out.embeddings->vectors = Eigen::Map<const Mat<T>>(params.data() + l.embedding(), l.words, l.d_in).template cast<double>();
    }
    out.steps = settings.steps;
    out.epochs_begun = order.epochs();
    out.seconds = seconds;
    return out;
}

}  // namespace

Projections initial_weights(const TrainingSet& set, const TrainSettings& settings) {
    SplitMix64 rng(settings.seed);
    const double scale = 1.0 / std::sqrt(static_cast<double>(set.d_in));
    Projections p;
    p.query = random_matrix(rng, set.d_in, settings.d_k, scale);
    p.key = random_matrix(rng, set.d_in, settings.d_k, scale);
    p.value = random_matrix(rng, set.d_in, settings.d_v, scale);
    if (settings.bias) {
        p.query_bias = Vector::Zero(settings.d_k), p.key_bias = Vector::Zero(settings.d_k);
        p.value_bias = Vector::Zero(settings.d_v);
    }
    return p;
}

Training train(const TrainingSet& set, const TrainSettings& settings, const std::optional<Projections>& start,
               const StepObserver& observe) {
    if (set.train.empty())
        throw UsageError("nothing to train on: every example is held out (lower --held-out)");
    const Projections first = start ? *start : initial_weights(set, settings);
    return settings.dtype == Dtype::float32 ? train_in<float>(set, settings, first, observe)
                                            : train_in<double>(set, settings, first, observe);
}

double example_loss(const Projections& weights, const TrainingExample& example, bool causal, Projections* gradient,
                    Matrix* input_gradient) {
    const Layout l = layout_of(weights);
    const std::vector<double> params = flatten<double>(weights, l);
    std::vector<double> g(params.size(), 0.0);
    Matrix dX = Matrix::Zero(example.inputs.rows(), example.inputs.cols());
    const double loss = example_pass<double>(l, params.data(), example.inputs, example, causal,
                                             gradient || input_gradient ? g.data() : nullptr,
                                             input_gradient ? &dX : nullptr);
    if (gradient) *gradient = unflatten<double>(g, l);
    if (input_gradient) *input_gradient = dX;
    return loss;
}

}  // namespace attntrace
