// The streaming backward pass of a single-sequence run (attention/streaming_backward.hpp): the
// inputs prepared and projected as the summary does, the heads handed to the kernels, and what
// the kernels' blocks give summed into the parameters' gradients and the inputs'. (The kernels'
// public names, each calling the copy compiled for this CPU, are in dispatch.cpp.)
#include "attention/streaming_backward.hpp"

#include "attention/affine.hpp"
#include "attention/heads.hpp"
#include "attention/kernels.hpp"
#include "attention/masks.hpp"
#include "attention/modes.hpp"
#include "attention/positions.hpp"
#include "attention/ordered_sum.hpp"
#include "attention/single.hpp"
#include "core/error.hpp"
#include "util/parallel.hpp"
#include "util/utf8.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace attntrace {

const Matrix* StreamGradients::parameter(std::string_view name) const {
    for (const ParameterGradient& p : parameters)
        if (p.name == name) return &p.data;
    return nullptr;
}

namespace {

template <typename Derived>
bool all_finite(const Eigen::MatrixBase<Derived>& m) {
    return m.size() == 0 || std::isfinite(m.cwiseAbs().template maxCoeff<Eigen::PropagateNaN>());
}

// Each column summed over the rows, in double: a bias's gradient.
template <typename Derived>
Matrix column_sums(const Eigen::MatrixBase<Derived>& d) {
    return d.template cast<double>().colwise().sum();
}

// The gradient of x from the gradient of RoPE(x), for the rows [first, first + d.rows()) of
// every head's block of d_head columns: each pair (i, i + d_head/2) turned back by −φ, as
// attention/backward_steps.hpp's rotate_back, with the sines and cosines rounded to T as
// rotate_half rounds them.
template <typename T>
MatrixT<T> turn_back(const RowsView<T>& d, const Matrix& angles, Eigen::Index first, Eigen::Index d_head) {
    const Eigen::Index half = d_head / 2;
    MatrixT<T> out(d.rows(), d.cols());
    for (Eigen::Index r = 0; r < d.rows(); ++r)
        for (Eigen::Index b = 0; b < d.cols(); b += d_head)
            for (Eigen::Index i = 0; i < half; ++i) {
                const double angle = angles(first + r, i);
                const T c = static_cast<T>(std::cos(angle)), s = static_cast<T>(std::sin(angle));
                const T x = d(r, b + i), y = d(r, b + i + half);
                out(r, b + i) = x * c + y * s;
                out(r, b + i + half) = y * c - x * s;
            }
    return out;
}

// Blocks of rows handed out in order (0, 1, …) to the threads of a parallel region, so that
// the parts an OrderedSum waits for come soon after each other.
template <typename Body>
void each_block_in_order(Eigen::Index n, Eigen::Index tile, double work, Body&& body) {
    const Eigen::Index blocks = (n + tile - 1) / tile;
    std::atomic<Eigen::Index> next{0};
    RegionErrors errors;
#pragma omp parallel if (worth_threads(work))
    for (Eigen::Index b; (b = next.fetch_add(1)) < blocks;)
        errors.run([&] { body(b * tile, std::min(tile, n - b * tile)); });
    errors.rethrow();
}

template <typename T>
class Backward {
public:
    using Row = Eigen::Matrix<T, 1, Eigen::Dynamic>;

    Backward(const Problem& problem, const SingleSetup& setup, const TraceOptions& o, const Loss& loss,
             const StreamBackwardOptions& options)
        : setup_(setup),
          loss_(loss),
          options_(options),
          origin_(problem.origin),
          mode_(mode_spec(o.mode)),
          w_(setup.weights.projections),
          layout_(setup.weights.layout) {
        prepare_inputs();
        project_and_split();
        const double divisor = scale_divisor(o.scale.value_or(mode_.default_scale()), o.scale_value, d_head_);
        plan_.causal = mode_.causal;
        plan_.window = setup.mask.window.value_or(0);
        if (std::find(setup.mask.padding.begin(), setup.mask.padding.end(), true) != setup.mask.padding.end())
            plan_.padding = &setup.mask.padding;
        plan_.scale = 1.0 / divisor / o.temperature;  // softmax(S / (divisor·T)): one factor on Q·Kᵀ
        plan_.tile = options.tile;
    }

    StreamGradients run() {
        StreamGradients g;
        g.loss = loss_;
        g.dtype = std::is_same_v<T, float> ? Dtype::float32 : Dtype::float64;
        if (loss_.kind == LossKind::focus) focus(g);
        else through_context(g);
        finish(g);
        return g;
    }

private:
    // X as the projections read it, in T: the embeddings (read in place when nothing changes
    // them), plus the sinusoidal encodings, then ln_1.
    void prepare_inputs() {
        const Sequence& sequence = *setup_.sequence;
        const PositionSetting& positions = setup_.positions;
        const bool sinusoidal = positions.scheme == PositionScheme::sinusoidal;
        if constexpr (std::is_same_v<T, float>)
            if (sequence.in_place && !sinusoidal && !setup_.layernorm) {
                const InPlaceRows& rows = *sequence.in_place;
                x_.emplace(rows_view(rows.data, rows.rows, rows.cols, rows.cols));
            }
        if (!x_) {
            Matrix widened;
            if (sequence.in_place) widened = sequence.in_place->view().cast<double>();
            const Matrix& embeddings = sequence.in_place ? widened : sequence.vectors;
            x_own_ = embeddings.cast<T>();
            if (sinusoidal)
                x_own_ += sinusoidal_encoding(embeddings.rows(), embeddings.cols(), positions.first).cast<T>();
            if (setup_.layernorm) {
                before_norm_ = std::move(x_own_);
                x_own_ = layer_norm<T>(before_norm_, *setup_.layernorm);
            }
            x_.emplace(rows_view(x_own_));
        }
        n_ = x_->rows();
        d_in_ = x_->cols();
        if (!all_finite(*x_))
            throw DataError(fmt::format("{}: an input number is too large for {}", origin_,
                                        std::is_same_v<T, float> ? "float32" : "float64"));
    }

    static std::optional<Row> bias_of(const std::optional<Vector>& b) {
        if (!b) return std::nullopt;
        return Row(b->template cast<T>());
    }

    // K and V (plain mode: X itself), projected from X where it is; Q too unless it is made
    // again per tile; each head's columns of them; RoPE's turned copies. Every gradient of K
    // and V is written over them once their key block is done (key_block_done), so the
    // views into where they are held are kept (key_store_, value_store_).
    void project_and_split() {
        const bool learned = w_.has_value();
        rope_ = setup_.positions.scheme == PositionScheme::rope;
        if (learned) {
            w_q_ = w_->query.cast<T>();
            w_k_ = w_->key.cast<T>();
            w_v_ = w_->value.cast<T>();
            b_q_ = bias_of(w_->query_bias);
            const std::optional<Row> b_k = bias_of(w_->key_bias), b_v = bias_of(w_->value_bias);
            k_ = backward_project<T>(*x_, w_k_, b_k ? &*b_k : nullptr);
            v_ = backward_project<T>(*x_, w_v_, b_v ? &*b_v : nullptr);
            const std::size_t q_bytes =
                static_cast<std::size_t>(n_) * static_cast<std::size_t>(w_q_.cols()) * sizeof(T);
            make_queries_ = !rope_ && options_.make_queries.value_or(q_bytes > made_queries_from);
            if (!make_queries_) q_ = backward_project<T>(*x_, w_q_, b_q_ ? &*b_q_ : nullptr);
            if (!all_finite(k_) || !all_finite(v_) || !all_finite(q_))
                throw DataError(
                    fmt::format("{}: the queries, keys or values overflow {}; the input numbers are too large", origin_,
                                std::is_same_v<T, float> ? "float32" : "float64"));
        }
        d_head_ = layout_.several() ? layout_.d_head : (learned ? w_q_.cols() : d_in_);
        d_v_ = layout_.several() ? layout_.d_v : (learned ? w_v_.cols() : d_in_);
        if (make_queries_) {
            queries_source_.x.emplace(*x_);
            queries_source_.w = &w_q_;
            queries_source_.bias = b_q_ ? &*b_q_ : nullptr;
        }
        if (rope_) angles_ = rotary_angles(n_, d_head_, setup_.positions.first);
        const RowsView<T> empty = rows_view<T>(nullptr, 0, d_head_, d_head_);
        const RowsView<T> queries = learned ? (make_queries_ ? empty : rows_view(q_)) : *x_;
        const RowsView<T> keys = learned ? rows_view(k_) : *x_;
        const RowsView<T> values = learned ? rows_view(v_) : *x_;
        turned_.reserve(static_cast<std::size_t>(layout_.heads + layout_.kv_heads));  // the views stay valid
        const auto turned = [&](const RowsView<T>& m, Eigen::Index index) {
            turned_.push_back(rotate_half<T>(MatrixT<T>(column_view(m, index * d_head_, d_head_)), angles_));
            return &turned_.back();
        };
        if (!learned) {  // plain: X is read-only (it may be the mapped file); its gradients are held apart
            plain_keys_ = MatrixT<T>::Zero(n_, d_in_);
            plain_values_ = MatrixT<T>::Zero(n_, d_in_);
        }
        std::vector<RowsView<T>> group_keys;
        for (int g = 0; g < layout_.kv_heads; ++g) {
            if (rope_) {
                MatrixT<T>* k = turned(keys, g);
                group_keys.push_back(rows_view(*k));
                key_store_.push_back({k->data(), k->cols()});
            } else {
                group_keys.push_back(column_view(keys, g * d_head_, d_head_));
                MatrixT<T>& store = learned ? k_ : plain_keys_;
                key_store_.push_back({store.data() + g * d_head_, store.cols()});
            }
            MatrixT<T>& values_store = learned ? v_ : plain_values_;
            value_store_.push_back({values_store.data() + g * d_v_, values_store.cols()});
        }
        for (int h = 1; h <= layout_.heads; ++h) {
            const int g = layout_.kv_head_of(h) - 1;
            const RowsView<T> q = make_queries_ ? empty
                                  : rope_       ? rows_view(*turned(queries, h - 1))
                                                : column_view(queries, (h - 1) * d_head_, d_head_);
            heads_.push_back({q, group_keys[static_cast<std::size_t>(g)], column_view(values, g * d_v_, d_v_), g});
        }
        if (rope_) {  // the heads read the turned copies; dW needs X, not Q or K
            q_.resize(0, 0);
            k_.resize(0, 0);
        }
    }

    Eigen::Index queries_width() const { return layout_.heads * d_head_; }
    Eigen::Index keys_width() const { return layout_.kv_heads * d_head_; }
    Eigen::Index values_width() const { return layout_.kv_heads * d_v_; }
    Eigen::Index context_width() const { return layout_.heads * d_v_; }
    bool has_output() const { return w_ && w_->output.has_value(); }
    std::size_t block_index(Eigen::Index first) const { return static_cast<std::size_t>(first / plan_.tile); }

    // Where key/value head g's gradients are written: over its keys and values.
    struct Store {
        T* data;
        Eigen::Index stride;
    };
    using Rows = Eigen::Map<MatrixT<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
    Rows stored(const Store& s, Eigen::Index first, Eigen::Index rows, Eigen::Index cols) const {
        return Rows(s.data + first * s.stride, rows, cols, Eigen::OuterStride<>(s.stride));
    }

    // A key block's finished dK (of the turned keys, with RoPE) and dV, written over the
    // block's keys and values, which no task reads again. Called from the kernel's threads,
    // each block once.
    void key_block_done(Eigen::Index first, const RowsView<T>& d_keys, const RowsView<T>& d_values) {
        const Eigen::Index rows = d_keys.rows();
        for (std::size_t g = 0; g < key_store_.size(); ++g) {
            const auto gi = static_cast<Eigen::Index>(g);
            stored(key_store_[g], first, rows, d_head_) = d_keys.middleCols(gi * d_head_, d_head_);
            stored(value_store_[g], first, rows, d_v_) = d_values.middleCols(gi * d_v_, d_v_);
        }
    }

    // The target of a target loss: of the result's shape, refused otherwise.
    void check_target(Eigen::Index width) const {
        if (loss_.target.rows() != n_ || loss_.target.cols() != width)
            throw DataError(fmt::format(
                "{}: the target has {} rows of {} numbers, and the {} it is compared with has {} "
                "rows of {}",
                origin_, loss_.target.rows(), loss_.target.cols(), has_output() ? "output" : "context", n_, width));
    }

    // Sum and target: the forward phase, the seed dZ and D made from each block of Z, then the
    // backward phase.
    void through_context(StreamGradients& g) {
        const bool sum = loss_.kind == LossKind::sum;
        const bool output = has_output();
        const Eigen::Index width = context_width(), d_out = output ? w_->output->cols() : 0;
        if (!sum) check_target(output ? d_out : width);
        const MatrixT<T> w_o = output ? MatrixT<T>(w_->output->cast<T>()) : MatrixT<T>();
        const std::optional<Row> b_o = output ? bias_of(w_->output_bias) : std::nullopt;
        MatrixT<T> row_seed, d_context, delta(n_, layout_.heads);
        if (sum)  // dZ = 1 (every row), or 1·W_oᵀ: the row sums of W_o in every row
            row_seed =
                output ? MatrixT<T>(w_->output->rowwise().sum().transpose().cast<T>()) : MatrixT<T>::Ones(1, width);
        else d_context.resize(n_, width);
        // totals: L, dW_o, db_o, and (sum with W_o) the column sums of Z
        OrderedSum seeds(
            {Matrix::Zero(1, 1), Matrix::Zero(width, d_out), Matrix::Zero(1, d_out), Matrix::Zero(1, width)});
        const auto context_done = [&](Eigen::Index first, const RowsView<T>& z) {
            const Eigen::Index rows = z.rows();
            std::vector<Matrix> parts(4);
            MatrixT<T> y;
            if (output) {
                y.resize(rows, d_out);
                backward_product<T>(z, false, rows_view(w_o), false, y, false);  // Y = Z·W_o + b_o
                if (b_o) y.rowwise() += *b_o;
            }
            const RowsView<T> result = output ? rows_view(y) : z;
            if (sum) {
                parts[0] = Matrix::Constant(1, 1, result.template cast<double>().sum());
                if (output) parts[3] = column_sums(z);
            } else {
                const Matrix d_result = result.template cast<double>() - loss_.target.middleRows(first, rows);
                parts[0] = Matrix::Constant(1, 1, 0.5 * d_result.squaredNorm());
                const MatrixT<T> dy = d_result.cast<T>();
                if (output) {
                    MatrixT<T> dz(rows, width), dw(width, d_out);
                    backward_product<T>(rows_view(dy), false, rows_view(w_o), true, dz, false);  // dZ = dY·W_oᵀ
                    d_context.middleRows(first, rows) = dz;
                    backward_product<T>(z, true, rows_view(dy), false, dw, false);  // dW_o += Zᵀ·dY
                    parts[1] = dw.template cast<double>();
                    parts[2] = column_sums(dy);
                } else {
                    d_context.middleRows(first, rows) = dy;
                }
            }
            block_deltas(first, z, sum ? row_seed : d_context, sum, delta);
            seeds.add(block_index(first), std::move(parts));
        };
        const MatrixT<T> lse = stream_forward_lse<T>(heads_, queries_source_, plan_, context_done);
        g.value = seeds.total(0)(0, 0);
        if (output) output_gradients(sum, seeds, d_out);
        if (options_.stages)
            context_ = sum ? Matrix(row_seed.template cast<double>().replicate(n_, 1))
                           : Matrix(d_context.template cast<double>());
        BackwardSeed<T> seed{&lse, &delta, sum ? nullptr : &d_context, row_seed};
        stream_backward_heads<T>(heads_, queries_source_, seed, plan_, d_queries_,
                                 [this](Eigen::Index first, const RowsView<T>& dk, const RowsView<T>& dv) {
                                     key_block_done(first, dk, dv);
                                 });
    }

    // D_i = Σ_k dZ_ik·Z_ik of a block of rows, per head, in double; dZ is the seed's one row
    // (seed_row: the sum loss) or the rows first, … of d_context.
    void block_deltas(Eigen::Index first, const RowsView<T>& z, const MatrixT<T>& dz, bool seed_row,
                      MatrixT<T>& delta) const {
        for (Eigen::Index i = 0; i < z.rows(); ++i)
            for (Eigen::Index h = 0; h < layout_.heads; ++h) {
                double inner = 0;
                for (Eigen::Index c = h * d_v_; c < (h + 1) * d_v_; ++c)
                    inner += static_cast<double>(dz(seed_row ? 0 : first + i, c)) * static_cast<double>(z(i, c));
                delta(first + i, h) = static_cast<T>(inner);
            }
    }

    // dW_o and db_o from the totals of the forward phase (totals 1 and 2, or with the sum loss
    // total 3, the column sums of Z).
    void output_gradients(bool sum, OrderedSum& seeds, Eigen::Index d_out) {
        if (sum) {  // dW_o = Zᵀ·1: each column the column sums of Z; db_o = n
            w_o_grad_ = seeds.total(3).transpose() * Matrix::Ones(1, d_out);
            b_o_grad_ = Matrix::Constant(1, d_out, static_cast<double>(n_));
        } else {
            w_o_grad_ = std::move(seeds.total(1));
            b_o_grad_ = std::move(seeds.total(2));
        }
    }

    // Whether query i may see key j.
    bool sees(Eigen::Index i, Eigen::Index j) const {
        if (plan_.causal && j > i) return false;
        if (plan_.window > 0 && (i - j >= plan_.window || (!plan_.causal && j - i >= plan_.window))) return false;
        return !(plan_.padding && (*plan_.padding)[static_cast<std::size_t>(j)]);
    }

    // L = −log A[q, k] of one head: only query q's row of weights, so its scores alone are
    // computed; dS has that one row, dS_qj = scale·(A_qj − [j = k]), dQ one row and dK = dSᵀ·Q_q.
    void focus(StreamGradients& g) {
        const bool several = layout_.heads > 1;
        const int head = loss_.head;
        if (several ? head < 1 || head > layout_.heads : head < 0 || head > 1)
            throw UsageError(several ? fmt::format("the focus loss names head {}, and this run has heads 1 to {}", head,
                                                   layout_.heads)
                                     : fmt::format("the focus loss names head {}, and this run has one head", head));
        const Eigen::Index query = loss_.query, key = loss_.key;
        if (query < 0 || query >= n_ || key < 0 || key >= n_)
            throw UsageError(
                fmt::format("the focus loss names query {} and key {}, and the weights have {} queries and {} "
                            "keys",
                            query + 1, key + 1, n_, n_));
        const std::size_t h = several ? static_cast<std::size_t>(head - 1) : 0;
        const BackwardHead<T>& hd = heads_[h];
        Row q_row;  // the query's row of this head's queries
        if (make_queries_) {
            MatrixT<T> made = x_->middleRows(query, 1) * w_q_;
            if (b_q_) made += *b_q_;
            q_row = made.middleCols(static_cast<Eigen::Index>(h) * d_head_, d_head_);
        } else {
            q_row = hd.q.row(query);
        }
        const T scale = static_cast<T>(plan_.scale);
        const Eigen::Matrix<T, Eigen::Dynamic, 1> s = scale * (hd.k * q_row.transpose());
        T top = -std::numeric_limits<T>::infinity();
        for (Eigen::Index j = 0; j < n_; ++j)
            if (sees(query, j)) top = std::max(top, s(j));
        Eigen::Matrix<T, Eigen::Dynamic, 1> a = Eigen::Matrix<T, Eigen::Dynamic, 1>::Zero(n_);
        T total = 0;
        for (Eigen::Index j = 0; j < n_; ++j)
            if (sees(query, j)) total += a(j) = std::exp(s(j) - top);
        a /= total;
        if (!(a(key) > 0)) {
            const auto& tokens = setup_.sequence->tokens;
            throw DataError(
                fmt::format("{}: the focus loss −log A needs a positive weight, but \"{}\" puts {} on \"{}\"{}",
                            origin_, printable(tokens[static_cast<std::size_t>(query)]), static_cast<double>(a(key)),
                            printable(tokens[static_cast<std::size_t>(key)]),
                            sees(query, key) ? "" : " (the mask hides that key from it)"));
        }
        g.value = -std::log(static_cast<double>(a(key)));
        Row ds(n_);
        for (Eigen::Index j = 0; j < n_; ++j) ds(j) = sees(query, j) ? scale * (a(j) - (j == key ? T(1) : T(0))) : T(0);
        d_queries_ = MatrixT<T>::Zero(n_, queries_width());
        d_queries_.row(query).segment(static_cast<Eigen::Index>(h) * d_head_, d_head_) = ds * hd.k;  // dQ_q = dS_q·K
        // dK_j = dS_qj·q_q and dV = 0, written over K and V a block at a time, now that they are read
        const Eigen::Index tile = plan_.tile;
        MatrixT<T> dk(tile, keys_width()), dv = MatrixT<T>::Zero(tile, values_width());
        for (Eigen::Index first = 0; first < n_; first += tile) {
            const Eigen::Index rows = std::min(tile, n_ - first);
            dk.setZero();
            dk.block(0, hd.group * d_head_, rows, d_head_).noalias() = ds.segment(first, rows).transpose() * q_row;
            key_block_done(first, rows_view(dk.data(), rows, dk.cols(), dk.cols()),
                           rows_view(dv.data(), rows, dv.cols(), dv.cols()));
        }
        if (has_output()) {  // the loss is on the weights, before the output
            w_o_grad_ = Matrix::Zero(w_->output->rows(), w_->output->cols());
            b_o_grad_ = Matrix::Zero(1, w_->output->cols());
        }
        if (options_.stages) context_ = Matrix::Zero(n_, context_width());
    }

    // A block of rows of a gradient held side by side per head or key/value head: turned back
    // by −φ with RoPE.
    MatrixT<T> unturned(MatrixT<T> d, Eigen::Index first) const {
        return rope_ ? turn_back<T>(rows_view(d), angles_, first, d_head_) : d;
    }

    // Per block of rows: dQ, dK, dV (turned back with RoPE) → their parts of dW_q, db_q, dW_k,
    // db_k, dW_v, db_v, and dX = dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ; then ln_1's backward; ‖dX_i‖.
    // The sums finish() makes over the blocks of rows, in this order.
    enum Part { dw_q, db_q, dw_k, db_k, dw_v, db_v, d_gamma, d_beta, parts_count };

    void finish(StreamGradients& g) {
        const bool learned = w_.has_value();
        const LayerNorm* ln = setup_.layernorm;
        OrderedSum sums({Matrix::Zero(d_in_, queries_width()), Matrix::Zero(1, queries_width()),
                         Matrix::Zero(d_in_, keys_width()), Matrix::Zero(1, keys_width()),
                         Matrix::Zero(d_in_, values_width()), Matrix::Zero(1, values_width()), Matrix::Zero(1, d_in_),
                         Matrix::Zero(1, d_in_)});
        g.input_norms.assign(static_cast<std::size_t>(n_), 0.0);
        if (options_.inputs) inputs_ = Matrix::Zero(n_, d_in_);
        if (options_.stages) {
            queries_ = Matrix::Zero(n_, queries_width());
            keys_ = Matrix::Zero(n_, keys_width());
            values_ = Matrix::Zero(n_, values_width());
        }
        const double width = static_cast<double>(queries_width() + keys_width() + values_width());
        const double work = static_cast<double>(n_) * static_cast<double>(d_in_) * width * 4;
        each_block_in_order(n_, plan_.tile, work, [&](Eigen::Index first, Eigen::Index rows) {
            const MatrixT<T> dq = unturned(d_queries_.middleRows(first, rows), first);
            MatrixT<T> dk(rows, keys_width()), dv(rows, values_width());
            for (std::size_t gi = 0; gi < key_store_.size(); ++gi) {
                const auto c = static_cast<Eigen::Index>(gi);
                dk.middleCols(c * d_head_, d_head_) = stored(key_store_[gi], first, rows, d_head_);
                dv.middleCols(c * d_v_, d_v_) = stored(value_store_[gi], first, rows, d_v_);
            }
            if (rope_) dk = unturned(std::move(dk), first);
            MatrixT<T> dx(rows, d_in_);
            std::vector<Matrix> parts(parts_count);
            if (learned) projections_block(first, rows, {&dq, &dk, &dv}, dx, parts);
            else dx = dq + dk + dv;  // plain: X is the queries, the keys and the values
            if (ln) layer_norm_block(first, *ln, dx, parts);
            for (Eigen::Index i = 0; i < rows; ++i)
                g.input_norms[static_cast<std::size_t>(first + i)] = dx.row(i).template cast<double>().norm();
            if (options_.inputs) inputs_.middleRows(first, rows) = dx.template cast<double>();
            if (options_.stages) {
                queries_.middleRows(first, rows) = dq.template cast<double>();
                keys_.middleRows(first, rows) = dk.template cast<double>();
                values_.middleRows(first, rows) = dv.template cast<double>();
            }
            sums.add(block_index(first), std::move(parts));
        });
        d_queries_.resize(0, 0);
        add_gradients(g, sums);
        check_finite(g);
        if (options_.inputs) g.inputs = std::move(inputs_);
        if (options_.stages) {
            g.context = std::move(context_);
            g.queries = std::move(queries_);
            g.keys = std::move(keys_);
            g.values = std::move(values_);
        }
    }

    // A block of rows' dX += dQ·W_qᵀ + dK·W_kᵀ + dV·W_vᵀ, and its parts of dW = Xᵀ·d and db
    // (column sums of d) for each of the three.
    void projections_block(Eigen::Index first, Eigen::Index rows, std::array<const MatrixT<T>*, 3> d_paths,
                           MatrixT<T>& dx, std::vector<Matrix>& parts) const {
        const RowsView<T> x = rows_view(x_->data() + first * x_->outerStride(), rows, d_in_, x_->outerStride());
        const MatrixT<T>* weights[] = {&w_q_, &w_k_, &w_v_};
        for (std::size_t p = 0; p < 3; ++p) {
            const MatrixT<T>& d = *d_paths[p];
            backward_product<T>(rows_view(d), false, rows_view(*weights[p]), true, dx, p > 0);  // dX += d·Wᵀ
            MatrixT<T> dw(d_in_, d.cols());
            backward_product<T>(x, true, rows_view(d), false, dw, false);  // dW = Xᵀ·d
            parts[2 * p] = dw.template cast<double>();
            parts[2 * p + 1] = column_sums(d);
        }
    }

    // dX from d(LN(X)) for a block of rows, row by row, as attention/backward_steps.hpp's
    // layer_norm_backward, and the block's parts of dγ and dβ.
    void layer_norm_block(Eigen::Index first, const LayerNorm& ln, MatrixT<T>& dx, std::vector<Matrix>& parts) const {
        parts[d_gamma] = parts[d_beta] = Matrix::Zero(1, d_in_);
        const auto d = static_cast<double>(d_in_);
        for (Eigen::Index i = 0; i < dx.rows(); ++i) {
            const RowMoments m = row_moments(before_norm_.row(first + i));
            const double sigma = std::sqrt(m.variance + ln.epsilon);
            Vector x_hat(d_in_), gx(d_in_);
            for (Eigen::Index c = 0; c < d_in_; ++c) {
                const double dy = static_cast<double>(dx(i, c));
                x_hat(c) = (static_cast<double>(before_norm_(first + i, c)) - m.mean) / sigma;
                gx(c) = dy * ln.gamma(c);
                parts[d_gamma](0, c) += dy * x_hat(c);
                parts[d_beta](0, c) += dy;
            }
            const double mean_g = gx.sum() / d, mean_gx = gx.cwiseProduct(x_hat).sum() / d;
            for (Eigen::Index c = 0; c < d_in_; ++c) dx(i, c) = static_cast<T>((gx(c) - mean_g - x_hat(c) * mean_gx) / sigma);
        }
    }

    // The parameters' gradients from the sums, in the order the trace lists its parameters.
    void add_gradients(StreamGradients& g, OrderedSum& sums) {
        const LayerNorm* ln = setup_.layernorm;
        // Each gradient with its formula, labelled as the trace labels the parameter (attention/single.cpp).
        const auto add = [&](std::string name, Matrix data, std::string formula, std::string rows, std::string cols,
                             bool vector) {
            if (!all_finite(data))
                throw DataError(
                    fmt::format("{}: the backward pass overflows: dL/d{} is not a finite number; the input "
                                "numbers are too large",
                                origin_, name));
            g.parameters.push_back(
                {std::move(name), std::move(data), std::move(formula), std::move(rows), std::move(cols), vector});
        };
        const std::string input = ln ? "LN(X)" : "X", row = ln ? "n" : "x";
        const auto projection = [&](const char* w, const char* b, const char* y, const char* cols, Part dw, Part db,
                                    bool bias) {
            add(w, std::move(sums.total(dw)), fmt::format("d{} = {}ᵀ·d{}", w, input, y), row, cols, false);
            if (bias) add(b, std::move(sums.total(db)), fmt::format("d{} = column sums of d{}", b, y), "", cols, true);
        };
        if (w_) {
            projection("W_q", "b_q", "Q", "q", dw_q, db_q, w_->query_bias.has_value());
            projection("W_k", "b_k", "K", "k", dw_k, db_k, w_->key_bias.has_value());
            projection("W_v", "b_v", "V", "v", dw_v, db_v, w_->value_bias.has_value());
            if (w_->output) {
                const bool several = layout_.several();
                add("W_o", std::move(w_o_grad_), fmt::format("dW_o = {}ᵀ·d(output)", several ? "concat" : "Z"),
                    several ? "c" : "z", "o", false);
                if (w_->output_bias) add("b_o", std::move(b_o_grad_), "db_o = column sums of d(output)", "", "o", true);
            }
        }
        if (ln) {
            add("gamma", std::move(sums.total(d_gamma)), "dγ = Σ over the rows of d(LN(X)) ⊙ x̂, x̂ = (x − mean(x)) / σ",
                "", "n", true);
            add("beta", std::move(sums.total(d_beta)), "dβ = column sums of d(LN(X))", "", "n", true);
        }
    }

    // The loss and each token's ‖dL/dx_i‖ are finite numbers, or the inputs were too large.
    void check_finite(const StreamGradients& g) const {
        if (!std::isfinite(g.value))
            throw DataError(
                fmt::format("{}: the loss is not a finite number; the input numbers are too large", origin_));
        for (const double norm : g.input_norms)
            if (!std::isfinite(norm))
                throw DataError(
                    fmt::format("{}: the backward pass overflows: dL/dX is not a finite number; the input "
                                "numbers are too large",
                                origin_));
    }

    const SingleSetup& setup_;
    const Loss& loss_;
    const StreamBackwardOptions& options_;
    const std::string& origin_;
    const ModeSpec& mode_;
    const std::optional<Projections>& w_;
    const HeadLayout& layout_;

    MatrixT<T> x_own_, before_norm_;  // X (after positions and ln_1), and X before ln_1
    std::optional<RowsView<T>> x_;    // X as the projections read it: x_own_ or the in-place rows
    Eigen::Index n_ = 0, d_in_ = 0, d_head_ = 0, d_v_ = 0;
    MatrixT<T> w_q_, w_k_, w_v_, q_, k_, v_;
    std::optional<Row> b_q_;
    bool make_queries_ = false;
    BackwardQueries<T> queries_source_;
    bool rope_ = false;
    Matrix angles_;
    std::vector<MatrixT<T>> turned_;
    std::vector<BackwardHead<T>> heads_;
    BackwardPlan plan_;
    MatrixT<T> plain_keys_, plain_values_;        // plain mode: dK and dV (X itself is not written)
    std::vector<Store> key_store_, value_store_;  // per key/value head: where its dK and dV go

    MatrixT<T> d_queries_;  // dQ (of the turned queries, with RoPE)
    Matrix w_o_grad_, b_o_grad_;
    Matrix inputs_;                             // StreamBackwardOptions::inputs
    Matrix context_, queries_, keys_, values_;  // StreamBackwardOptions::stages
};

// The run's header, as the summary's (attention/summary.cpp), and the loss's title and formula
// as the full backward pass's (attention/backward.cpp).
void describe(StreamGradients& g, const Problem& problem, const SingleSetup& setup, const TraceOptions& o) {
    const ModeSpec& mode = mode_spec(o.mode);
    g.mode = o.mode;
    g.origin = problem.origin;
    g.tokens = setup.sequence->tokens;
    g.weights = setup.weights.origin;
    g.seed = o.seed;
    g.notes = setup.weights.notes;
    if (auto note = padding_note(setup.mask, g.tokens)) g.notes.push_back(std::move(*note));
    const auto& w = setup.weights.projections;
    const HeadLayout& layout = setup.weights.layout;
    const Eigen::Index d_in = setup.sequence->vectors.cols();
    g.dims = dims_of(layout, d_in, w ? w->query.cols() : d_in, w ? w->value.cols() : d_in);
    g.heads = layout.heads;
    g.kv_heads = layout.kv_heads;
    g.positions = setup.positions.scheme;
    g.first_position = setup.positions.first;
    g.scale_rule = o.scale.value_or(mode.default_scale());
    g.scale = scale_divisor(g.scale_rule, o.scale_value, layout.several() ? layout.d_head : w ? w->query.cols() : d_in);
    g.temperature = o.temperature;
    describe_run(g, problem, o);
    const bool output = w && w->output;
    const std::string result = output ? "output" : "context";
    switch (g.loss.kind) {
    case LossKind::focus: {
        const std::string& q = g.tokens[static_cast<std::size_t>(g.loss.query)];
        const std::string& k = g.tokens[static_cast<std::size_t>(g.loss.key)];
        g.title = fmt::format("Loss: the cross-entropy that asks \"{}\" to put its weight on \"{}\"{}", q, k,
                              g.loss.head > 0 ? fmt::format(" in head {}", g.loss.head) : "");
        g.formula = fmt::format("L = −log {}[{}, {}]", g.loss.head > 0 ? fmt::format("A_{}", g.loss.head) : "A", q, k);
        return;
    }
    case LossKind::target:
        g.title = fmt::format("Loss: half the squared distance of the {} from the target", result);
        g.formula = fmt::format("L = ½‖{} − T‖²", output ? "output" : "Z");
        return;
    case LossKind::sum:
        g.title = fmt::format("Loss: every number of the {} summed", result);
        g.formula = fmt::format("L = Σ {}", output ? "output" : "Z");
        return;
    }
}

}  // namespace

StreamGradients stream_backward(const Problem& problem, const TraceOptions& trace_options, const Loss& loss,
                                const StreamBackwardOptions& options) {
    check_options_for_mode(trace_options);
    const ModeSpec& mode = mode_spec(trace_options.mode);
    if (!mode.streams)
        throw UsageError(fmt::format(
            "the streaming backward pass is for the modes with a streaming path; {} mode has none", mode.name()));
    if (trace_options.normalization != Normalization::softmax)
        throw UsageError("the streaming backward pass differentiates softmax; --normalize sum has no streaming path");
    if (options.tile < 1)
        throw UsageError(
            fmt::format("the streaming backward pass needs tiles of at least one token, not {}", options.tile));
    const SingleSetup setup = setup_single(problem, trace_options);
    if (!trace_options.mask_method.standard())
        throw UsageError(
            "--mask-fill and --mask-after-softmax show a wrong way of masking in the full tables; the "
            "streaming backward pass masks the right way only");
    StreamGradients g = trace_options.dtype == Dtype::float32
                            ? Backward<float>(problem, setup, trace_options, loss, options).run()
                            : Backward<double>(problem, setup, trace_options, loss, options).run();
    describe(g, problem, setup, trace_options);
    return g;
}

}  // namespace attntrace
