#include "attention/rnn_compare.hpp"

#include "attention/optimizer.hpp"
#include "attention/rnn.hpp"
#include "core/generator.hpp"

#include <chrono>
#include <cmath>

namespace attntrace {
namespace {

// −log softmax(logits)[c], and its gradient p − e_c into `d`.
double cross_entropy(const Vector& logits, Eigen::Index c, Vector& d) {
    const double top = logits.maxCoeff();
    d = (logits.array() - top).exp().matrix();
    const double total = d.sum();
    d /= total;
    const double loss = top + std::log(total) - logits(c);
    d(c) -= 1;
    return loss;
}

// A model's matrices, in order, for the optimizer's flat array.
std::vector<Matrix*> parts(AttentionReader& m) { return {&m.W_q, &m.W_k, &m.W_v}; }
std::vector<Matrix*> parts(RnnReader& m) { return {&m.rnn.W_x, &m.rnn.W_h, &m.W_r}; }
std::vector<Vector*> vectors(AttentionReader&) { return {}; }
std::vector<Vector*> vectors(RnnReader& m) { return {&m.rnn.b_h, &m.b_r}; }

template <typename Model>
std::vector<double> pack(Model& m) {
    std::vector<double> flat;
    for (Matrix* p : parts(m)) flat.insert(flat.end(), p->data(), p->data() + p->size());
    for (Vector* v : vectors(m)) flat.insert(flat.end(), v->data(), v->data() + v->size());
    return flat;
}
template <typename Model>
void unpack(const std::vector<double>& flat, Model& m) {
    std::size_t at = 0;
    for (Matrix* p : parts(m)) std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(at), p->size(), p->data()), at += static_cast<std::size_t>(p->size());
    for (Vector* v : vectors(m)) std::copy_n(flat.begin() + static_cast<std::ptrdiff_t>(at), v->size(), v->data()), at += static_cast<std::size_t>(v->size());
}
template <typename Model>
Model zeros_like(Model m) {
    for (Matrix* p : parts(m)) p->setZero();
    for (Vector* v : vectors(m)) v->setZero();
    return m;
}

template <typename Model>
double accuracy(const Model& m, const std::vector<NamedExample>& examples);

// Trains `m` on `train`, one batch a step, the batch's gradients summed in its order; `reached`:
// the first step whose held-out accuracy is 95% or more, judged every steps / 100 steps.
template <typename Model>
double fit(Model& m, const std::vector<NamedExample>& train, const std::vector<NamedExample>& held,
           const TrainSettings& s, std::optional<std::int64_t>& reached) {
    const std::int64_t every = std::max<std::int64_t>(1, s.steps / 100);
    Order order(train.size(), s.seed);
    Updater<double> updater{s, {}, {}, 0};
    std::vector<double> params = pack(m);
    Vector logits;
    for (std::int64_t step = 1; step <= s.steps; ++step) {
        const auto batch = order.next(static_cast<std::size_t>(s.batch));
        Model gradient = zeros_like(m);
        for (const std::size_t i : batch) (void)reader_loss(m, train[i], logits, &gradient);
        std::vector<double> g = pack(gradient);
        for (double& x : g) x /= static_cast<double>(batch.size());
        updater.step(params, g);
        unpack(params, m);
        if (!reached && !held.empty() && (step % every == 0 || step == s.steps) && accuracy(m, held) >= 0.95)
            reached = step;
    }
    double total = 0;
    for (const auto& e : train) total += reader_loss(m, e, logits, nullptr);
    return total / static_cast<double>(train.size());
}

template <typename Model>
double accuracy(const Model& m, const std::vector<NamedExample>& examples) {
    Vector logits;
    std::size_t right = 0;
    for (const auto& e : examples) {
        (void)reader_loss(m, e, logits, nullptr);
        Eigen::Index top = 0;
        logits.maxCoeff(&top);
        right += top == e.subject;
    }
    return examples.empty() ? 0.0 : static_cast<double>(right) / static_cast<double>(examples.size());
}

}  // namespace

double reader_loss(const AttentionReader& m, const NamedExample& e, Vector& logits, AttentionReader* g) {
    const Eigen::Index n = e.X.rows();
    const double root = std::sqrt(static_cast<double>(m.W_q.cols()));
    const Vector q = e.X.row(n - 1) * m.W_q;
    const Matrix K = e.X * m.W_k, V = e.X * m.W_v;
    const Vector s = (K * q.transpose()).transpose() / root;
    Vector a = (s.array() - s.maxCoeff()).exp().matrix();
    a /= a.sum();
    logits = a * V;
    Vector dz;
    const double loss = cross_entropy(logits, e.subject, dz);
    if (g) {
        const Vector da = (V * dz.transpose()).transpose();           // da_j = dz·v_j
        const Vector ds = (a.array() * (da.array() - a.dot(da))).matrix() / root;
        const Vector dq = ds * K;                                      // Σ_j ds_j·k_j
        const Matrix dK = ds.transpose() * q;                          // dk_j = ds_j·q
        g->W_q += e.X.row(n - 1).transpose() * dq;
        g->W_k += e.X.transpose() * dK;
        g->W_v += e.X.transpose() * (a.transpose() * dz);            // dv_j = a_j·dz
    }
    return loss;
}

double reader_loss(const RnnReader& m, const NamedExample& e, Vector& logits, RnnReader* g) {
    const Matrix H = rnn_hidden_states(m.rnn, e.X);
    const Eigen::Index n = H.rows();
    logits = H.row(n - 1) * m.W_r + m.b_r;
    Vector dlogits;
    const double loss = cross_entropy(logits, e.subject, dlogits);
    if (g) {
        g->W_r += H.row(n - 1).transpose() * dlogits;
        g->b_r += dlogits;
        Vector dh = dlogits * m.W_r.transpose();
        for (Eigen::Index t = n - 1; t >= 0; --t) {  // backpropagation through time
            const Vector dpre = (dh.array() * (1.0 - H.row(t).array().square())).matrix();
            g->rnn.W_x += e.X.row(t).transpose() * dpre;
            if (t > 0) g->rnn.W_h += H.row(t - 1).transpose() * dpre;
            g->rnn.b_h += dpre;
            dh = dpre * m.rnn.W_h.transpose();
        }
    }
    return loss;
}

AttentionReader initial_attention_reader(std::uint64_t seed, Eigen::Index d, Eigen::Index d_k, Eigen::Index classes) {
    TrainingSet shape;  // attntrace train's own initial weights, with d_v = K
    shape.d_in = d;
    TrainSettings s;
    s.seed = seed, s.d_k = d_k, s.d_v = classes;
    Projections p = initial_weights(shape, s);
    return {std::move(p.query), std::move(p.key), std::move(p.value)};
}

RnnReader initial_rnn_reader(std::uint64_t seed, Eigen::Index d, Eigen::Index d_h, Eigen::Index classes) {
    RnnReader m;
    m.rnn = draw_rnn(seed, d, d_h, RnnInit::scaled, 1.0);
    SplitMix64 rng(seed ^ 0x2545F4914F6CDD1DULL);
    m.W_r = random_matrix(rng, d_h, classes, 1.0 / std::sqrt(static_cast<double>(d_h)));
    m.b_r = Vector::Zero(classes);
    return m;
}

GapResult compare_at_gap(std::size_t gap, const std::vector<NamedExample>& train, const std::vector<NamedExample>& held_out,
                         Eigen::Index classes, Eigen::Index d_k, Eigen::Index d_h, const TrainSettings& settings) {
    const auto began = std::chrono::steady_clock::now();
    const Eigen::Index d = train.front().X.cols();
    AttentionReader attention = initial_attention_reader(settings.seed, d, d_k, classes);
    RnnReader rnn = initial_rnn_reader(settings.seed, d, d_h, classes);
    GapResult r;
    r.gap = gap;
    r.attention_loss = fit(attention, train, held_out, settings, r.attention_reached);
    r.rnn_loss = fit(rnn, train, held_out, settings, r.rnn_reached);
    r.attention_accuracy = accuracy(attention, held_out);
    r.rnn_accuracy = accuracy(rnn, held_out);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    return r;
}

}  // namespace attntrace
