// The streaming backward pass's two phases (attention/streaming_backward.hpp): compiled once
// per instruction set, as streaming.cpp is (attention/isa.hpp), since nearly all of their time
// is Eigen's matrix products on tiles and the exponentials, which take the CPU's widest
// registers only when the whole file is compiled for them.
#include "attention/streaming_backward.hpp"

#include "attention/hot_functions.hpp"
#include "attention/isa.hpp"
#include "attention/own_product.hpp"
#include "attention/packet_exp.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <immintrin.h>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

// GCC 12's false alarm on AVX-512 intrinsics inlined here: packet_exp.hpp says more.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attntrace {
namespace ATTNTRACE_ISA {     // one copy per instruction set: attention/isa.hpp
namespace backward_kernels {  // named: the copies compile this file and streaming.cpp as one unit
namespace {

namespace ei = Eigen::internal;
template <typename T>
using Packet = typename ei::packet_traits<T>::type;  // one vector register of T
template <typename T>
constexpr Eigen::Index lanes = ei::packet_traits<T>::size;

// Flush-to-zero and denormals-are-zero while a phase runs, as on the forward streaming path:
// e^(s − ℓ) of far-off keys would otherwise be subnormal numbers, which cost a hundred cycles
// each. The previous mode is restored on exit.
class FlushDenormals {
public:
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
    ~FlushDenormals() { _mm_setcsr(saved_); }
    FlushDenormals(const FlushDenormals&) = delete;
    FlushDenormals& operator=(const FlushDenormals&) = delete;

private:
    unsigned saved_;
};

// e^x for a register of T: Eigen's for floats, packet_exp.hpp's division-free one for doubles.
template <typename P>
P exp_of(const P& x) {
    if constexpr (sizeof(typename ei::unpacket_traits<P>::type) == 8) return exp_without_division(x);
    else return ei::pexp(x);
}

// ---------------------------------------------------------------------------------------
// Which pairs a tile holds.

struct Span {
    Eigen::Index begin = 0, end = 0;  // [begin, end)
};

// The keys some query of [first, first + rows) may see (padding aside).
Span keys_seen(const BackwardPlan& plan, Eigen::Index n, Eigen::Index first, Eigen::Index rows) {
    Span s{0, plan.causal ? first + rows : n};
    if (plan.window > 0) {
        s.begin = std::max<Eigen::Index>(0, first - plan.window + 1);
        if (!plan.causal) s.end = first + rows + plan.window - 1;
    }
    s.end = std::min(s.end, n);
    return s;
}

// The queries that may see some key of [key, key + cols) (padding aside).
Span queries_seeing(const BackwardPlan& plan, Eigen::Index n, Eigen::Index key, Eigen::Index cols) {
    Span s{plan.causal ? key : 0, n};
    if (plan.window > 0) {
        s.end = std::min(n, key + cols + plan.window - 1);
        if (!plan.causal) s.begin = std::max<Eigen::Index>(0, key - plan.window + 1);
    }
    return s;
}

// The row blocks that may see key block c: [begin, end).
Span row_blocks_seeing(const BackwardPlan& plan, Eigen::Index n, Eigen::Index c) {
    const Eigen::Index tile = plan.tile, key = c * tile;
    const Span q = queries_seeing(plan, n, key, std::min(tile, n - key));
    if (q.end <= q.begin) return {0, 0};
    return {q.begin / tile, (q.end - 1) / tile + 1};
}

// How many of a tile's columns query `row` may read: causal, the keys up to its own; the
// keys after them are neither masked nor read (their scores may be anything).
Eigen::Index readable(const BackwardPlan& plan, Eigen::Index row, Eigen::Index key, Eigen::Index cols) {
    return plan.causal ? std::clamp<Eigen::Index>(row + 1 - key, 0, cols) : cols;
}

// ---------------------------------------------------------------------------------------
// The tiles' products by own_product.hpp's kernels, where this copy has them and the shapes
// are whole registers (a long input: 256 tokens or more); Eigen's otherwise. The kernels read
// the operands where they are, where Eigen copies ("packs") both for every product: for the
// scores and dP = dZ·Vᵀ they read a key block's Kᵀ and Vᵀ (the scratches' panels), and dSᵀ·Q
// and Pᵀ·dZ read dS and P transposed in place.

template <typename T>
bool own_tiles(const BackwardHead<T>& head, const BackwardPlan& plan) {
    if constexpr (own_products<T>)
        return own_products_for<T>(head.k.rows()) && whole_registers<T>(plan.tile) &&
               whole_registers<T>(head.k.cols()) && whole_registers<T>(head.v.cols());
    else return false;
}

// Rows [key, key + cols) of m transposed into `panel` (m.cols() × tile: a row of the block's
// transpose is a row in memory), the columns past `cols` 0.
template <typename T>
void transpose_into(const RowsView<T>& m, Eigen::Index key, Eigen::Index cols, T* panel, Eigen::Index tile) {
    Eigen::Map<MatrixT<T>> p(panel, m.cols(), tile);
    p.leftCols(cols) = m.middleRows(key, cols).transpose();
    if (cols < tile) p.rightCols(tile - cols).setZero();
}

// A tile's first query less its first key (the kernels skip what causal rows never read).
Eigen::Index diagonal_of(const BackwardPlan& plan, Eigen::Index first, Eigen::Index key) { return plan.causal ? first - key : anywhere; }

// out (rows × tile, all tile columns) = alpha·A·panel, A rows × depth: the scores or dP of a
// tile. Causal (diagonal = first query − first key), a group of columns that no row of a
// group sees is left as it was: the rows are read only up to their own key.
template <typename T>
void own_tile_product(const RowsView<T>& a, const T* panel, Eigen::Index tile, MatrixT<T>& out, Eigen::Index rows,
                      T alpha, Eigen::Index diagonal) {
    if constexpr (own_products<T>)
        own_product<T, false>(a.data(), a.outerStride(), panel, tile, out.data(), out.cols(), rows, tile, a.cols(),
                              alpha, diagonal);
}

// S = scale·Q_rows·K_colsᵀ into the top-left corner of `s` (q: the query block's rows, first
// … first + rows − 1), with the keys a query may not see for the window or padding set to
// `lowest`, whose e^(lowest − m) is 0. The forward and the backward phase compute each tile
// with this one function from the same query rows, by the same product (with `k_panel`, the
// block's Kᵀ, own_product.hpp's kernel), so P = e^(S − ℓ) in the backward reads the very
// scores whose log-sum-exp ℓ is.
template <typename T, typename Queries>
void tile_scores(const Queries& q, const RowsView<T>& k, const T* k_panel, const BackwardPlan& plan, Eigen::Index first,
                 Eigen::Index rows, Eigen::Index key, Eigen::Index cols, MatrixT<T>& s) {
    constexpr T lowest = -std::numeric_limits<T>::max();
    auto tile = s.topLeftCorner(rows, cols);
    if (k_panel)
        own_tile_product<T>(q, k_panel, plan.tile, s, rows, static_cast<T>(plan.scale), diagonal_of(plan, first, key));
    else tile.noalias() = static_cast<T>(plan.scale) * (q * k.middleRows(key, cols).transpose());
    if (plan.window > 0)
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index c = 0; c < cols; ++c) {
                const Eigen::Index distance = first + r - (key + c);
                if (distance >= plan.window || (!plan.causal && -distance >= plan.window)) tile(r, c) = lowest;
            }
    if (plan.padding)
        for (Eigen::Index c = 0; c < cols; ++c)
            if ((*plan.padding)[static_cast<std::size_t>(key + c)]) tile.col(c).setConstant(lowest);
}

// The rows first … first + rows − 1 of every head's queries, side by side (head h in columns
// h·d_head …), made from X when the queries are not held: X_rows·W_q + b_q.
template <typename T>
void make_queries(const BackwardQueries<T>& queries, Eigen::Index first, Eigen::Index rows, MatrixT<T>& out) {
    auto block = out.topRows(rows);
    block.noalias() = queries.x->middleRows(first, rows) * *queries.w;
    if (queries.bias) block.rowwise() += *queries.bias;
}

// Head h's query rows of a block: held ones in place, or its columns of the made block.
template <typename T>
auto query_block(const BackwardHead<T>& head, const BackwardQueries<T>& queries, const MatrixT<T>& made, std::size_t h,
                 Eigen::Index first, Eigen::Index rows) {
    const Eigen::Index d_head = head.k.cols();
    if (queries.x) return rows_view(made.data() + static_cast<Eigen::Index>(h) * d_head, rows, d_head, made.cols());
    return rows_view(head.q.data() + first * head.q.outerStride(), rows, d_head, head.q.outerStride());
}

// ---------------------------------------------------------------------------------------
// Row operations, a register at a time. The last count % lanes numbers go through the same
// vector exp, padded, so that a number gets the same exponential wherever it falls.

template <typename T>
T row_max(const T* x, Eigen::Index count, T lowest) {
    using P = Packet<T>;
    constexpr Eigen::Index L = lanes<T>;
    T best = lowest;
    Eigen::Index j = 0;
    if (count >= L) {
        P m = ei::ploadu<P>(x);
        for (j = L; j + L <= count; j += L) m = ei::pmax(m, ei::ploadu<P>(x + j));
        best = std::max(best, ei::predux_max(m));
    }
    for (; j < count; ++j) best = std::max(best, x[j]);
    return best;
}

// x_j = e^(x_j − shift) for j < count, in place; returns their sum.
template <typename T>
T exp_in_place(T* x, Eigen::Index count, T shift) {
    using P = Packet<T>;
    constexpr Eigen::Index L = lanes<T>;
    const P s = ei::pset1<P>(shift);
    P sum0 = ei::pset1<P>(T(0)), sum1 = sum0;
    Eigen::Index j = 0;
    for (; j + 2 * L <= count; j += 2 * L) {
        const P p0 = exp_of(ei::psub(ei::ploadu<P>(x + j), s));
        const P p1 = exp_of(ei::psub(ei::ploadu<P>(x + j + L), s));
        ei::pstoreu(x + j, p0);
        ei::pstoreu(x + j + L, p1);
        sum0 = ei::padd(sum0, p0);
        sum1 = ei::padd(sum1, p1);
    }
    if (j + L <= count) {
        const P p = exp_of(ei::psub(ei::ploadu<P>(x + j), s));
        ei::pstoreu(x + j, p);
        sum0 = ei::padd(sum0, p);
        j += L;
    }
    T total = ei::predux(ei::padd(sum0, sum1));
    if (j < count) {
        alignas(64) T in[L] = {}, out[L];
        for (Eigen::Index t = j; t < count; ++t) in[t - j] = x[t] - shift;
        ei::pstoreu(out, exp_of(ei::ploadu<P>(in)));
        for (Eigen::Index t = j; t < count; ++t) total += x[t] = out[t - j];
    }
    return total;
}

// One row of a backward tile, for its first `count` keys: P = e^(s − ℓ) over the scores (in
// place), dS = scale·P ⊙ (dP − D) into `ds` from `dp` (which may be `ds` itself, or one row
// that every row of the tile shares), and, with `column_sums`, P added to them. The keys after
// `count` get 0 in P and dS.
template <typename T>
void softmax_backward_row(T* s, const T* dp, T* ds, Eigen::Index count, Eigen::Index cols, T lse, T delta, T scale,
                          T* column_sums) {
    using P = Packet<T>;
    constexpr Eigen::Index L = lanes<T>;
    const P l = ei::pset1<P>(lse), d = ei::pset1<P>(delta), f = ei::pset1<P>(scale);
    Eigen::Index j = 0;
    for (; j + L <= count; j += L) {
        const P p = exp_of(ei::psub(ei::ploadu<P>(s + j), l));
        ei::pstoreu(s + j, p);
        ei::pstoreu(ds + j, ei::pmul(ei::pmul(p, ei::psub(ei::ploadu<P>(dp + j), d)), f));
        if (column_sums) ei::pstoreu(column_sums + j, ei::padd(ei::ploadu<P>(column_sums + j), p));
    }
    if (j < count) {
        alignas(64) T in[L] = {}, out[L];
        for (Eigen::Index t = j; t < count; ++t) in[t - j] = s[t] - lse;
        ei::pstoreu(out, exp_of(ei::ploadu<P>(in)));
        for (Eigen::Index t = j; t < count; ++t) {
            s[t] = out[t - j];
            ds[t] = s[t] * (dp[t] - delta) * scale;
            if (column_sums) column_sums[t] += s[t];
        }
    }
    for (j = count; j < cols; ++j) s[j] = ds[j] = T(0);
}

// ---------------------------------------------------------------------------------------
// Errors in a region whose tasks wait for each other: the first error is kept, and a task
// that waits for one that failed gives up (`Abandoned`) instead of waiting for ever.

struct Abandoned {};

class Failures {
public:
    template <typename Body>
    void run(Body&& body) noexcept {
        try {
            std::forward<Body>(body)();
        } catch (const Abandoned&) {
        } catch (...) {
            {
                const std::lock_guard lock(mutex_);
                if (!first_) first_ = std::current_exception();
            }
            failed_.store(true, std::memory_order_release);
        }
    }
    bool failed() const { return failed_.load(std::memory_order_acquire); }
    void rethrow() const {
        if (first_) std::rethrow_exception(first_);
    }

private:
    std::mutex mutex_;
    std::exception_ptr first_;
    std::atomic<bool> failed_{false};
};

// Tasks handed out in order, 0, 1, 2, …, each to a thread that has finished its last: a
// task that waits for an earlier one waits for a task that is running.
class InOrder {
public:
    explicit InOrder(Eigen::Index count) : count_(count) {}
    bool next(Eigen::Index& task) {
        task = next_.fetch_add(1, std::memory_order_relaxed);
        return task < count_;
    }

private:
    Eigen::Index count_;
    std::atomic<Eigen::Index> next_{0};
};

// ---------------------------------------------------------------------------------------
// The forward phase.

template <typename T>
struct ForwardScratch {
    MatrixT<T> s;        // tile × tile: scaled scores, then e^(s − m)
    MatrixT<T> acc;      // tile × d_v: Σ e^(s − m)·v
    MatrixT<T> context;  // tile × H·d_v
    MatrixT<T> q;        // tile × H·d_head: the block's queries, when they are made here
    MatrixT<T> k_panel;  // d_head × tile: a key block's Kᵀ, with own_product.hpp's kernels
    Eigen::Array<T, Eigen::Dynamic, 1> max, sum;
    ForwardScratch(Eigen::Index tile, Eigen::Index d_head, Eigen::Index d_v, Eigen::Index heads,
                   Eigen::Index made_queries, bool own)
        : s(tile, tile),
          acc(tile, d_v),
          context(tile, d_v * heads),
          q(made_queries > 0 ? tile : 0, made_queries),
          k_panel(own ? d_head : 0, own ? tile : 0),
          max(tile),
          sum(tile) {}
};

// One head's query block against every key it may see: its rows of Z (into the scratch's
// context, columns `column` …) and of ℓ.
template <typename T>
void forward_head(const BackwardHead<T>& h, const RowsView<T>& q, const BackwardPlan& plan, Eigen::Index first,
                  Eigen::Index rows, Eigen::Index column, ForwardScratch<T>& w, T* lse, Eigen::Index lse_stride) {
    constexpr T lowest = -std::numeric_limits<T>::max();
    const Eigen::Index n = h.k.rows(), d_v = h.v.cols(), tile = plan.tile;
    w.max.head(rows).setConstant(-std::numeric_limits<T>::infinity());
    w.sum.head(rows).setZero();
    w.acc.topRows(rows).setZero();
    const Span keys = keys_seen(plan, n, first, rows);
    const bool own = w.k_panel.size() > 0;
    for (Eigen::Index key = keys.begin - keys.begin % tile; key < keys.end; key += tile) {
        const Eigen::Index cols = std::min(tile, n - key);
        // Kᵀ made again per query block: kept for all, it would cost n·d_head more at the peak
        if (own) transpose_into(h.k, key, cols, w.k_panel.data(), tile);
        tile_scores<T>(q, h.k, own ? w.k_panel.data() : nullptr, plan, first, rows, key, cols, w.s);
        for (Eigen::Index r = 0; r < rows; ++r) {
            T* s = &w.s(r, 0);
            const Eigen::Index count = readable(plan, first + r, key, cols);
            const T tile_max = row_max(s, count, lowest);
            if (!(tile_max > lowest)) {  // nothing this row may see here: m, l and acc stay
                std::fill(s, s + cols, T(0));
                continue;
            }
            T& m = w.max(r);
            if (tile_max > m) {
                // what was summed against the old max is rescaled; a row that saw no key yet has nothing
                const T rescale = m > lowest ? std::exp(m - tile_max) : T(0);
                w.sum(r) *= rescale;
                w.acc.row(r) *= rescale;
                m = tile_max;
            }
            w.sum(r) += exp_in_place(s, count, m);
            std::fill(s + count, s + cols, T(0));
        }
        if constexpr (own_products<T>)
            if (own) {  // acc += P·V_block, causal: each row's sum stops after its own key
                own_product<T, true>(w.s.data(), w.s.cols(), h.v.data() + key * h.v.outerStride(), h.v.outerStride(),
                                     w.acc.data(), w.acc.cols(), rows, d_v, cols, T(1), diagonal_of(plan, first, key));
                continue;
            }
        w.acc.topRows(rows).noalias() += w.s.topLeftCorner(rows, cols) * h.v.middleRows(key, cols);
    }
    for (Eigen::Index r = 0; r < rows; ++r) {
        T& l = lse[(first + r) * lse_stride];
        if (w.max(r) > lowest) {
            w.context.row(r).segment(column, d_v) = w.acc.row(r) / w.sum(r);
            l = w.max(r) + std::log(w.sum(r));
        } else {  // every key hidden: weights and context 0, and e^(s − ℓ) = 0 for every s
            w.context.row(r).segment(column, d_v).setZero();
            l = std::numeric_limits<T>::infinity();
        }
    }
}

template <typename T>
MatrixT<T> forward_phase(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                         const BackwardPlan& plan, const ContextBlockDone<T>& done) {
    const auto h_count = static_cast<Eigen::Index>(heads.size());
    const Eigen::Index n = heads.empty() ? 0 : heads.front().k.rows();
    MatrixT<T> lse(n, h_count);
    if (n == 0) return lse;
    const Eigen::Index d_k = heads.front().k.cols(), d_v = heads.front().v.cols(), tile = plan.tile;
    const Eigen::Index blocks = (n + tile - 1) / tile;
    const double work = static_cast<double>(h_count) * static_cast<double>(n) * static_cast<double>(n) *
                        (plan.causal ? 0.5 : 1.0) * (2.0 * static_cast<double>(d_k + d_v) + 10.0);
    Failures failures;
    InOrder tasks(blocks);
#pragma omp parallel if (worth_threads(work))
    {
        const FlushDenormals flush;
        std::optional<ForwardScratch<T>> scratch;
        failures.run([&] {
            scratch.emplace(tile, d_k, d_v, h_count, queries.x ? queries.w->cols() : 0, own_tiles(heads.front(), plan));
        });
        for (Eigen::Index b = 0; scratch && !failures.failed() && tasks.next(b);)
            failures.run([&] {
                const Eigen::Index first = b * tile, rows = std::min(tile, n - first);
                if (queries.x) make_queries(queries, first, rows, scratch->q);
                for (Eigen::Index h = 0; h < h_count; ++h) {
                    const auto hs = static_cast<std::size_t>(h);
                    forward_head(heads[hs], query_block(heads[hs], queries, scratch->q, hs, first, rows), plan, first,
                                 rows, h * d_v, *scratch, lse.data() + h, h_count);
                }
                done(first, rows_view(scratch->context.data(), rows, scratch->context.cols(), scratch->context.cols()));
            });
    }
    failures.rethrow();
    return lse;
}

// ---------------------------------------------------------------------------------------
// The backward phase.

template <typename T>
struct BackwardScratch {
    MatrixT<T> s, ds;   // tile × tile: scores, then P; dP, then dS
    MatrixT<T> dk, dv;  // tile × G·d_head, tile × G·d_v: the key block's sums
    MatrixT<T> q;       // tile × H·d_head: a row block's queries, when they are made here
    // A sum's dZ is one row z in every row, so dP = dZ·Vᵀ has one row u = z·Vᵀ in every row
    // and dV = Pᵀ·dZ is (P's column sums)ᵀ·z: u and the column sums, per head (H × tile).
    MatrixT<T> u, column_sums;
    // With own_product.hpp's kernels: the key block's Kᵀ and Vᵀ of each head (H·d_head × tile,
    // H·d_v × tile; head h's in rows h·d_head …), made once for all the row blocks.
    MatrixT<T> k_panels, v_panels;
    BackwardScratch(Eigen::Index tile, Eigen::Index d_head, Eigen::Index d_v, Eigen::Index heads, Eigen::Index groups,
                    Eigen::Index made_queries, bool own)
        : s(tile, tile),
          ds(tile, tile),
          dk(tile, groups * d_head),
          dv(tile, groups * d_v),
          q(made_queries > 0 ? tile : 0, made_queries),
          u(heads, tile),
          column_sums(heads, tile),
          k_panels(own ? heads * d_head : 0, own ? tile : 0),
          v_panels(own ? heads * d_v : 0, own ? tile : 0) {}
};

// Where each row block's sum of dQ stands: count(h, r) is how many key blocks have added
// their part to head h's rows of row block r. The task of key block c adds when the count
// is c − first[r], first[r] the first key block that row block r sees: the parts are added
// in the order of the key blocks, whichever thread computes them.
class Turns {
public:
    Turns(std::size_t heads, Eigen::Index row_blocks, std::vector<Eigen::Index> first_key_block)
        : row_blocks_(row_blocks),
          counts_(heads * static_cast<std::size_t>(row_blocks)),
          first_(std::move(first_key_block)) {
        for (auto& c : counts_) c.store(0, std::memory_order_relaxed);
    }
    void wait(std::size_t head, Eigen::Index r, Eigen::Index c, const Failures& failures) const {
        const auto mine = c - first_[static_cast<std::size_t>(r)];
        const auto& count = at(head, r);
        for (int spins = 0; count.load(std::memory_order_acquire) != mine; ++spins) {
            if (failures.failed()) throw Abandoned{};
            if (spins < 64) _mm_pause();
            else std::this_thread::yield();
        }
    }
    void done(std::size_t head, Eigen::Index r) { at(head, r).fetch_add(1, std::memory_order_release); }

private:
    std::atomic<Eigen::Index>& at(std::size_t head, Eigen::Index r) {
        return counts_[head * static_cast<std::size_t>(row_blocks_) + static_cast<std::size_t>(r)];
    }
    const std::atomic<Eigen::Index>& at(std::size_t head, Eigen::Index r) const {
        return counts_[head * static_cast<std::size_t>(row_blocks_) + static_cast<std::size_t>(r)];
    }
    Eigen::Index row_blocks_;
    std::vector<std::atomic<Eigen::Index>> counts_;
    std::vector<Eigen::Index> first_;
};

// The start of key block c's task ([key, key + cols)): its sums of dK and dV set to 0; with
// own_product.hpp's kernels, each head's Kᵀ and Vᵀ of the block; for a sum, each head's
// u = z·Vᵀ, and P's column sums set to 0.
template <typename T>
void start_key_block(const std::vector<BackwardHead<T>>& heads, const BackwardSeed<T>& seed, Eigen::Index key,
                     Eigen::Index cols, BackwardScratch<T>& w) {
    const Eigen::Index d_head = heads.front().k.cols(), d_v = heads.front().v.cols(), tile = w.s.cols();
    const bool same_row = seed.d_context == nullptr;
    w.dk.topRows(cols).setZero();
    w.dv.topRows(cols).setZero();
    for (std::size_t h = 0; h < heads.size(); ++h) {
        const auto hi = static_cast<Eigen::Index>(h);
        if (w.k_panels.size() > 0) {
            transpose_into(heads[h].k, key, cols, &w.k_panels(hi * d_head, 0), tile);
            if (!same_row) transpose_into(heads[h].v, key, cols, &w.v_panels(hi * d_v, 0), tile);
        }
        if (same_row)  // u_j = z·v_j
            w.u.row(hi).head(cols).noalias() =
                seed.d_context_row.row(0).segment(hi * d_v, d_v) * heads[h].v.middleRows(key, cols).transpose();
    }
    if (same_row) w.column_sums.leftCols(cols).setZero();
}

// A tile's three products once its dS is made: dV_c += Pᵀ·dZ_r (unless dz is null: a sum),
// dK_c += dSᵀ·Q_r into the scratch's sums of key/value head `group`, and, once `wait` returns
// (the turn of this key block), dQ_r += dS·K_c (k: K_c's rows) into d_q. With `own`, by
// own_product.hpp's kernels (causal, each row of dS·K stops after its own key); else Eigen's.
template <typename T, typename Keys, typename Out, typename Wait>
void tile_gradients(BackwardScratch<T>& w, bool own, const RowsView<T>* dz, const RowsView<T>& q, const Keys& k,
                    int group, Eigen::Index rows, Eigen::Index cols, Eigen::Index diagonal, Out&& d_q, Wait&& wait) {
    const Eigen::Index d_head = q.cols(), tile = w.s.cols();
    if constexpr (own_products<T>)
        if (own) {
            if (dz)
                own_product<T, true, true>(w.s.data(), tile, dz->data(), dz->outerStride(),
                                           &w.dv(0, group * dz->cols()), w.dv.cols(), cols, dz->cols(), rows, T(1));
            own_product<T, true, true>(w.ds.data(), tile, q.data(), q.outerStride(), &w.dk(0, group * d_head),
                                       w.dk.cols(), cols, d_head, rows, T(1));
            wait();
            own_product<T, true>(w.ds.data(), tile, k.data(), k.outerStride(), d_q.data(), d_q.outerStride(), rows,
                                 d_head, cols, T(1), diagonal);
            return;
        }
    const auto ds = w.ds.topLeftCorner(rows, cols);
    if (dz)
        w.dv.block(0, group * dz->cols(), cols, dz->cols()).noalias() += w.s.topLeftCorner(rows, cols).transpose() * *dz;
    w.dk.block(0, group * d_head, cols, d_head).noalias() += ds.transpose() * q;
    wait();
    d_q.noalias() += ds * k;
}

// The task of key block c: every row block that sees the block, in order, and in each every
// head. dK_c and dV_c are summed here alone; dQ_r receives its part in its turn.
template <typename T>
void key_block_task(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                    const BackwardSeed<T>& seed, const BackwardPlan& plan, Eigen::Index c, MatrixT<T>& d_queries,
                    BackwardScratch<T>& w, Turns& turns, const Failures& failures, const KeyBlockDone<T>& done) {
    const Eigen::Index n = heads.front().k.rows(), d_head = heads.front().k.cols(), d_v = heads.front().v.cols();
    const Eigen::Index tile = plan.tile, key = c * tile, cols = std::min(tile, n - key);
    const T scale = static_cast<T>(plan.scale);
    const bool same_row = seed.d_context == nullptr;  // a sum: dZ is one row
    const bool own = w.k_panels.size() > 0;
    start_key_block(heads, seed, key, cols, w);
    const Span row_blocks = row_blocks_seeing(plan, n, c);
    for (Eigen::Index r = row_blocks.begin; r < row_blocks.end; ++r) {
        const Eigen::Index first = r * tile, rows = std::min(tile, n - first);
        if (queries.x) make_queries(queries, first, rows, w.q);
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const BackwardHead<T>& head = heads[h];
            const auto hi = static_cast<Eigen::Index>(h);
            const RowsView<T> q = query_block(head, queries, w.q, h, first, rows);
            const Eigen::Index diagonal = diagonal_of(plan, first, key);
            tile_scores<T>(q, head.k, own ? &w.k_panels(hi * d_head, 0) : nullptr, plan, first, rows, key, cols, w.s);
            std::optional<RowsView<T>> dz;
            if (!same_row) {  // dP = dZ·Vᵀ
                dz.emplace(rows_view(seed.d_context->data() + first * seed.d_context->cols() + hi * d_v, rows, d_v,
                                     seed.d_context->cols()));
                if (own) own_tile_product<T>(*dz, &w.v_panels(hi * d_v, 0), tile, w.ds, rows, T(1), diagonal);
                else w.ds.topLeftCorner(rows, cols).noalias() = *dz * head.v.middleRows(key, cols).transpose();
            }
            T* sums = same_row ? &w.column_sums(hi, 0) : nullptr;
            for (Eigen::Index i = 0; i < rows; ++i) {
                const T lse = (*seed.lse)(first + i, hi);
                // a row that sees no key at all (ℓ = +∞) has weights 0
                const Eigen::Index count = std::isinf(lse) ? 0 : readable(plan, first + i, key, cols);
                softmax_backward_row(&w.s(i, 0), same_row ? &w.u(hi, 0) : &w.ds(i, 0), &w.ds(i, 0), count, cols, lse,
                                     (*seed.delta)(first + i, hi), scale, sums);
            }
            // dQ_r in its turn: the key blocks before this one have added theirs
            tile_gradients(w, own, dz ? &*dz : nullptr, q, head.k.middleRows(key, cols), head.group, rows, cols,
                           diagonal, d_queries.block(first, hi * d_head, rows, d_head),
                           [&] { turns.wait(h, r, c, failures); });
            turns.done(h, r);
        }
    }
    if (same_row)  // dV_c += (Σ_i P_ij)ᵀ·z, each head's
        for (std::size_t h = 0; h < heads.size(); ++h) {
            const auto hi = static_cast<Eigen::Index>(h);
            w.dv.block(0, heads[h].group * d_v, cols, d_v).noalias() +=
                w.column_sums.row(hi).head(cols).transpose() * seed.d_context_row.row(0).segment(hi * d_v, d_v);
        }
    done(key, rows_view(w.dk.data(), cols, w.dk.cols(), w.dk.cols()),
         rows_view(w.dv.data(), cols, w.dv.cols(), w.dv.cols()));
}

template <typename T>
void backward_phase(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                    const BackwardSeed<T>& seed, const BackwardPlan& plan, MatrixT<T>& d_queries,
                    const KeyBlockDone<T>& done) {
    const Eigen::Index n = heads.empty() ? 0 : heads.front().k.rows();
    const Eigen::Index d_head = heads.empty() ? 0 : heads.front().k.cols(),
                       d_v = heads.empty() ? 0 : heads.front().v.cols();
    const Eigen::Index tile = plan.tile;
    int groups = 0;
    for (const auto& h : heads) groups = std::max(groups, h.group + 1);
    d_queries.setZero(n, static_cast<Eigen::Index>(heads.size()) * d_head);
    if (n == 0) return;
    const Eigen::Index blocks = (n + tile - 1) / tile;
    // The first key block that each row block's dQ receives a part from; the key blocks a row
    // block sees follow each other (causal, window and padding hide a contiguous run at most).
    std::vector<Eigen::Index> first_key_block(static_cast<std::size_t>(blocks), -1);
    for (Eigen::Index c = 0; c < blocks; ++c) {
        const Span rows = row_blocks_seeing(plan, n, c);
        for (Eigen::Index r = rows.begin; r < rows.end; ++r)
            if (first_key_block[static_cast<std::size_t>(r)] < 0) first_key_block[static_cast<std::size_t>(r)] = c;
    }
    Turns turns(heads.size(), blocks, std::move(first_key_block));
    // Five products over d_head or d_v (three for a sum) and an exp per pair a query sees, every
    // head; the queries made again for each tile are a small part.
    const double per_pair = seed.d_context ? 6.0 * static_cast<double>(d_head) + 4.0 * static_cast<double>(d_v) + 10.0
                                           : 6.0 * static_cast<double>(d_head) + 14.0;
    const double work = static_cast<double>(heads.size()) * static_cast<double>(n) * static_cast<double>(n) *
                        (plan.causal ? 0.5 : 1.0) * per_pair;
    Failures failures;
    InOrder tasks(blocks);
#pragma omp parallel if (worth_threads(work))
    {
        const FlushDenormals flush;
        std::optional<BackwardScratch<T>> scratch;
        failures.run([&] {
            scratch.emplace(tile, d_head, d_v, static_cast<Eigen::Index>(heads.size()), groups,
                            queries.x ? queries.w->cols() : 0, own_tiles(heads.front(), plan));
        });
        for (Eigen::Index c = 0; scratch && !failures.failed() && tasks.next(c);)
            failures.run(
                [&] { key_block_task(heads, queries, seed, plan, c, d_queries, *scratch, turns, failures, done); });
    }
    failures.rethrow();
}

}  // namespace
}  // namespace backward_kernels

// ---------------------------------------------------------------------------------------
// The products of the gradients with the weights and the inputs, a block of rows at a time:
// here, so that they take this copy's registers.

template <typename T>
MatrixT<T> backward_project(const RowsView<T>& x, const MatrixT<T>& w,
                            const Eigen::Matrix<T, 1, Eigen::Dynamic>* bias) {
    MatrixT<T> out(x.rows(), w.cols());
    const Eigen::Index tile = backward_tile, blocks = (x.rows() + tile - 1) / tile;
    RegionErrors errors;
#pragma omp parallel for schedule( \
    static) if (worth_threads(2.0 * static_cast <double>(out.size()) * static_cast <double>(w.rows())))
    for (Eigen::Index b = 0; b < blocks; ++b)
        errors.run([&] {
            const Eigen::Index first = b * tile, rows = std::min(tile, x.rows() - first);
            auto block = out.middleRows(first, rows);
            block.noalias() = x.middleRows(first, rows) * w;
            if (bias) block.rowwise() += *bias;
        });
    errors.rethrow();
    return out;
}

template <typename T>
void backward_product(const RowsView<T>& a, bool transpose_a, const RowsView<T>& b, bool transpose_b, MatrixT<T>& out,
                      bool add) {
    const auto into = [&](const auto& product) {
        if (add) out.noalias() += product;
        else out.noalias() = product;
    };
    if (transpose_a && transpose_b) into(a.transpose() * b.transpose());
    else if (transpose_a) into(a.transpose() * b);
    else if (transpose_b) into(a * b.transpose());
    else into(a * b);
}

template <typename T>
MatrixT<T> stream_forward_lse(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                              const BackwardPlan& plan, const ContextBlockDone<T>& done) {
    return backward_kernels::forward_phase<T>(heads, queries, plan, done);
}

template <typename T>
void stream_backward_heads(const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,
                           const BackwardSeed<T>& seed, const BackwardPlan& plan, MatrixT<T>& d_queries,
                           const KeyBlockDone<T>& done) {
    backward_kernels::backward_phase<T>(heads, queries, seed, plan, d_queries, done);
}

// The lists of attention/hot_functions.hpp, one copy per instruction set.
ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
