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

// Where each parameter sits in one flat array (the optimizer's view): W_q, W_k, W_v by rows, W_o
// with several heads, then b_q, b_k, b_v (and b_o) when the layer has biases, then the embedding
// table (a row per word) when the embeddings are learned.
struct Layout {
    Eigen::Index d_in = 0, d_k = 0, d_v = 0;  // d_k and d_v: each head's
    bool bias = false;
    Eigen::Index words = 0;  // rows of the embedding table (0: the inputs are fixed)
    int heads = 1;
    Eigen::Index d_out = 0;  // W_o's columns (0: none, one head)
    int focus_head = 0;      // 1-based; 0: a focus example is about the heads' mean weight

    Eigen::Index qk() const { return heads * d_k; }  // W_q's and W_k's columns
    Eigen::Index vs() const { return heads * d_v; }  // W_v's columns
    Eigen::Index w_q() const { return 0; }
    Eigen::Index w_k() const { return d_in * qk(); }
    Eigen::Index w_v() const { return 2 * d_in * qk(); }
    Eigen::Index w_o() const { return w_v() + d_in * vs(); }
    Eigen::Index b_q() const { return w_o() + vs() * d_out; }
    Eigen::Index b_k() const { return b_q() + qk(); }
    Eigen::Index b_v() const { return b_k() + qk(); }
    Eigen::Index b_o() const { return b_v() + vs(); }
    Eigen::Index embedding() const { return b_q() + (bias ? 2 * qk() + vs() + d_out : 0); }
    Eigen::Index size() const { return embedding() + words * d_in; }
};

Layout layout_of(const Projections& p, HeadUse use) {
    const Eigen::Index h = use.heads;
    return {p.query.rows(), p.query.cols() / h, p.value.cols() / h, p.query_bias.has_value(), 0, use.heads,
            p.output ? p.output->cols() : 0, use.focus_head};
}

template <typename T>
std::vector<T> flatten(const Projections& p, const Layout& l) {
    std::vector<T> flat(static_cast<std::size_t>(l.size()));
    const auto put = [&](const Matrix& m, Eigen::Index at) {
        Eigen::Map<Mat<T>>(flat.data() + at, m.rows(), m.cols()) = m.cast<T>();
    };
    put(p.query, l.w_q()), put(p.key, l.w_k()), put(p.value, l.w_v());
    if (l.d_out > 0) put(*p.output, l.w_o());
    if (l.bias) put(*p.query_bias, l.b_q()), put(*p.key_bias, l.b_k()), put(*p.value_bias, l.b_v());
    if (l.bias && l.d_out > 0) put(*p.output_bias, l.b_o());
    return flat;
}

template <typename T>
Projections unflatten(const std::vector<T>& flat, const Layout& l) {
    const auto get = [&](Eigen::Index at, Eigen::Index rows, Eigen::Index cols) -> Matrix {
        return Eigen::Map<const Mat<T>>(flat.data() + at, rows, cols).template cast<double>();
    };
    Projections p;
    p.query = get(l.w_q(), l.d_in, l.qk()), p.key = get(l.w_k(), l.d_in, l.qk()), p.value = get(l.w_v(), l.d_in, l.vs());
    if (l.d_out > 0) p.output = get(l.w_o(), l.vs(), l.d_out);
    if (l.bias) {
        p.query_bias = get(l.b_q(), 1, l.qk()), p.key_bias = get(l.b_k(), 1, l.qk());
        p.value_bias = get(l.b_v(), 1, l.vs());
        if (l.d_out > 0) p.output_bias = get(l.b_o(), 1, l.d_out);
    }
    return p;
}

// The parameters as matrices over a flat array (const or not); W_o and b_o are empty without
// several heads, the biases without `bias`.
template <typename T, typename Pointer>
struct Views {
    using M = std::conditional_t<std::is_const_v<std::remove_pointer_t<Pointer>>, Eigen::Map<const Mat<T>>,
                                 Eigen::Map<Mat<T>>>;
    M W_q, W_k, W_v, W_o, b_q, b_k, b_v, b_o;
    Views(Pointer p, const Layout& l)
        : W_q(p + l.w_q(), l.d_in, l.qk()), W_k(p + l.w_k(), l.d_in, l.qk()), W_v(p + l.w_v(), l.d_in, l.vs()),
          W_o(p + l.w_o(), l.d_out > 0 ? l.vs() : 0, l.d_out), b_q(p + (l.bias ? l.b_q() : 0), 1, l.bias ? l.qk() : 0),
          b_k(p + (l.bias ? l.b_k() : 0), 1, l.bias ? l.qk() : 0), b_v(p + (l.bias ? l.b_v() : 0), 1, l.bias ? l.vs() : 0),
          b_o(p + (l.bias ? l.b_o() : 0), 1, l.bias ? l.d_out : 0) {}
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

// A focus example: only the query's row of each head's scores is needed. `weights` gets the row
// the loss is about (the heads' mean, or the focus head's). With `dX`, the gradient of the inputs
// is added there too.
template <typename T>
double focus_pass(const Layout& l, const T* p, const Mat<T>& X, const TrainingExample::Focus& f, bool causal,
                  T* g, Row<T>* weights, Mat<T>* dX = nullptr) {
    const Views<T, const T*> w(p, l);
    const T scale = std::sqrt(static_cast<T>(l.d_k));
    const Eigen::Index visible = causal ? f.query + 1 : X.rows(), d = l.d_k;
    const int first = l.focus_head > 0 ? l.focus_head - 1 : 0, last = l.focus_head > 0 ? l.focus_head : l.heads;
    std::vector<Mat<T>> K(static_cast<std::size_t>(l.heads));
    std::vector<Row<T>> q(K.size()), a(K.size());
    std::vector<T> logs(K.size());  // log A_h[q, k] = S_hk − logsumexp(S_h), kept in logs so none underflows
    for (int h = first; h < last; ++h) {
        const auto u = static_cast<std::size_t>(h);
        K[u] = X * w.W_k.middleCols(h * d, d);
        q[u] = X.row(f.query) * w.W_q.middleCols(h * d, d);
        if (l.bias) K[u].rowwise() += Row<T>(w.b_k.middleCols(h * d, d)), q[u] += w.b_q.middleCols(h * d, d);
        const Row<T> s = (K[u] * q[u].transpose()).transpose() / scale;
        logs[u] = s(f.key) - softmax_row<T>(s, visible, a[u]);
    }
    // log Σ_h A_h[q, k]; with one head it is log A[q, k] itself.
    T top = logs[static_cast<std::size_t>(first)];
    for (int h = first; h < last; ++h) top = std::max(top, logs[static_cast<std::size_t>(h)]);
    T total = 0;
    for (int h = first; h < last; ++h) total += std::exp(logs[static_cast<std::size_t>(h)] - top);
    const T log_sum = top + std::log(total);
    const T count = static_cast<T>(last - first);
    if (weights) {
        weights->setZero(X.rows());
        for (int h = first; h < last; ++h) *weights += a[static_cast<std::size_t>(h)];
        *weights /= count;
    }
    if (g) {
        Views<T, T*> dw(g, l);
        for (int h = first; h < last; ++h) {
            const auto u = static_cast<std::size_t>(h);
            Row<T> ds = a[u];
            ds(f.key) -= T(1);
            ds *= std::exp(logs[u] - log_sum);  // this head's share of the weight on the key (1 with one head)
            ds /= scale;
            const Row<T> dq = ds * K[u];
            const Mat<T> dK = ds.transpose() * q[u];
            dw.W_q.middleCols(h * d, d) += X.row(f.query).transpose() * dq;
            dw.W_k.middleCols(h * d, d) += X.transpose() * dK;
            if (l.bias) dw.b_q.middleCols(h * d, d) += dq, dw.b_k.middleCols(h * d, d) += dK.colwise().sum();
            if (dX)
                *dX += dK * w.W_k.middleCols(h * d, d).transpose(),
                    dX->row(f.query) += dq * w.W_q.middleCols(h * d, d).transpose();
        }
    }
    return static_cast<double>(std::log(count) - log_sum);
}

// Each head's softmax weights, its context Z_h into its block of C, for a target example.
template <typename T>
struct HeadPass {
    Mat<T> Q, K, V, A;
};

// A target example: the whole layer, forward and back: each head's A_h and Z_h, then W_o
// mixing [Z_1 … Z_H] when there are several.
template <typename T>
double target_pass(const Layout& l, const T* p, const Mat<T>& X, const Matrix& target, bool causal, T* g,
                   Mat<T>* dX = nullptr) {
    const Views<T, const T*> w(p, l);
    const T scale = std::sqrt(static_cast<T>(l.d_k));
    const Eigen::Index n = X.rows(), d = l.d_k, e = l.d_v;
    std::vector<HeadPass<T>> heads(static_cast<std::size_t>(l.heads));
    Mat<T> C(n, l.vs());
    Row<T> a;
    for (int h = 0; h < l.heads; ++h) {
        HeadPass<T>& hp = heads[static_cast<std::size_t>(h)];
        hp.Q = X * w.W_q.middleCols(h * d, d), hp.K = X * w.W_k.middleCols(h * d, d), hp.V = X * w.W_v.middleCols(h * e, e);
        if (l.bias)
            hp.Q.rowwise() += Row<T>(w.b_q.middleCols(h * d, d)), hp.K.rowwise() += Row<T>(w.b_k.middleCols(h * d, d)),
                hp.V.rowwise() += Row<T>(w.b_v.middleCols(h * e, e));
        const Mat<T> S = hp.Q * hp.K.transpose() / scale;
        hp.A.resize(n, n);
        for (Eigen::Index i = 0; i < n; ++i) {
            (void)softmax_row<T>(S.row(i), causal ? i + 1 : n, a);
            hp.A.row(i) = a;
        }
        C.middleCols(h * e, e) = hp.A * hp.V;
    }
    Mat<T> out = l.d_out > 0 ? Mat<T>(C * w.W_o) : C;
    if (l.d_out > 0 && l.bias) out.rowwise() += Row<T>(w.b_o);
    const Mat<T> dO = out - target.cast<T>();
    const double loss = 0.5 * dO.template cast<double>().squaredNorm();
    if (!g) return loss;
    Views<T, T*> dw(g, l);
    Mat<T> dC = dO;
    if (l.d_out > 0) {
        dw.W_o += C.transpose() * dO, dC = dO * w.W_o.transpose();
        if (l.bias) dw.b_o += dO.colwise().sum();
    }
    for (int h = 0; h < l.heads; ++h) {
        const HeadPass<T>& hp = heads[static_cast<std::size_t>(h)];
        const Mat<T> dZ = dC.middleCols(h * e, e);
        const Mat<T> dA = dZ * hp.V.transpose();
        const Mat<T> dV = hp.A.transpose() * dZ;
        const Eigen::Matrix<T, Eigen::Dynamic, 1> along = (dA.array() * hp.A.array()).rowwise().sum();
        const Mat<T> dS = (hp.A.array() * (dA.array().colwise() - along.array())).matrix() / scale;
        const Mat<T> dQ = dS * hp.K, dK = dS.transpose() * hp.Q;
        dw.W_q.middleCols(h * d, d) += X.transpose() * dQ, dw.W_k.middleCols(h * d, d) += X.transpose() * dK;
        dw.W_v.middleCols(h * e, e) += X.transpose() * dV;
        if (l.bias)
            dw.b_q.middleCols(h * d, d) += dQ.colwise().sum(), dw.b_k.middleCols(h * d, d) += dK.colwise().sum(),
                dw.b_v.middleCols(h * e, e) += dV.colwise().sum();
        if (dX)
            *dX += dQ * w.W_q.middleCols(h * d, d).transpose() + dK * w.W_k.middleCols(h * d, d).transpose() +
                   dV * w.W_v.middleCols(h * e, e).transpose();
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
    return n * l.d_in * (2 * l.qk() + l.vs()) * 2 + n * n * (l.qk() + l.vs()) * 4 + n * l.vs() * l.d_out * 2;
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
    Layout l = layout_of(start, {settings.heads, settings.focus_head});
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
    const Eigen::Index h = settings.heads, qk = h * settings.d_k, vs = h * settings.d_v;
    Projections p;
    p.query = random_matrix(rng, set.d_in, qk, scale);
    p.key = random_matrix(rng, set.d_in, qk, scale);
    p.value = random_matrix(rng, set.d_in, vs, scale);
    if (settings.heads > 1) p.output = random_matrix(rng, vs, settings.d_out, 1.0 / std::sqrt(static_cast<double>(vs)));
    if (settings.bias) {
        p.query_bias = Vector::Zero(qk), p.key_bias = Vector::Zero(qk);
        p.value_bias = Vector::Zero(vs);
        if (p.output) p.output_bias = Vector::Zero(settings.d_out);
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
                    Matrix* input_gradient, HeadUse use) {
    const Layout l = layout_of(weights, use);
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

std::vector<double> head_focus(const Projections& weights, const TrainingExample& example, bool causal, int heads) {
    std::vector<double> out;
    Row<double> a;
    for (int h = 1; h <= heads; ++h) {
        const Layout l = layout_of(weights, {heads, h});
        const std::vector<double> params = flatten<double>(weights, l);
        (void)focus_pass<double>(l, params.data(), example.inputs, *example.focus, causal, nullptr, &a);
        out.push_back(a(example.focus->key));
    }
    return out;
}

}  // namespace attntrace
