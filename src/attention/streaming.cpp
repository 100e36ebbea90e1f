#include "attention/streaming.hpp"

#include "attention/hot_functions.hpp"
#include "attention/isa.hpp"
#include "attention/own_product.hpp"
#include "attention/packet_exp.hpp"
#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <limits>
#include <mutex>
#include <omp.h>
#include <optional>
#include <immintrin.h>
#include <type_traits>

// The third version of attention/reference.hpp's self_attention (after kernels.hpp's): its
// passes 2 to 4 fused, one block of queries against one block of keys at a time, with an online
// softmax (streaming.hpp), so that the n × n matrices are never held.

// GCC 12's false alarm on AVX-512 intrinsics inlined here (Eigen's predux of 8 doubles):
// packet_exp.hpp says more.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attntrace {
namespace ATTNTRACE_ISA {  // one copy per instruction set: attention/isa.hpp
namespace {

// Flush-to-zero and denormals-are-zero for the hot loop: exp(s − m) of far-off keys would
// otherwise produce subnormal numbers, which cost a hundred cycles each. Their weights are
// below 1e-38 (float) or 1e-308 (double) either way. The previous mode is restored on exit.
class FlushDenormals {
public:
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040); }
    ~FlushDenormals() { _mm_setcsr(saved_); }
    FlushDenormals(const FlushDenormals&) = delete;
    FlushDenormals& operator=(const FlushDenormals&) = delete;

private:
    unsigned saved_;
};

// Per-thread scratch, allocated once per thread. Each thread's buffers are separate heap
// blocks (Eigen aligns them to 64 bytes), so threads never share a cache line.
template <typename T>
struct Scratch {
    MatrixT<T> scores;   // bq × bk: one block of scaled scores
    MatrixT<T> probs;    // bq × bk: exp(score − running max)
    MatrixT<T> acc;      // bq × d_v: running Σ exp(s − m)·v
    Eigen::Array<T, Eigen::Dynamic, 1> max, sum, spread;  // per row: m, l, Σ exp(s − m)(s − m)
    std::vector<std::vector<std::pair<T, Eigen::Index>>> best;  // per row: top scores, best first

    Scratch(Eigen::Index bq, Eigen::Index bk, Eigen::Index d_v, std::size_t top)
        : scores(bq, bk), probs(bq, bk), acc(bq, d_v), max(bq), sum(bq), spread(bq), best(static_cast<std::size_t>(bq)) {
        for (auto& b : best) b.reserve(top + 1);
    }
};

// Keeps the `top` highest (score, index) pairs; a later key only displaces a strictly lower
// score, so among equal scores the lower index stays first.
template <typename T>
void offer(std::vector<std::pair<T, Eigen::Index>>& best, std::size_t top, T score, Eigen::Index index) {
    if (best.size() == top && !(score > best.back().first)) return;
    auto at = best.end();
    while (at != best.begin() && score > std::prev(at)->first) --at;
    best.insert(at, {score, index});
    if (best.size() > top) best.pop_back();
}

// Bit i set when lane i of the vector register of T at `p` is above `threshold` (false for
// NaN, as `>` is): one comparison, where taking the register's max would take a chain of
// shuffles.
template <typename T>
unsigned lanes_above(const T* p, T threshold) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
    constexpr int register_bytes = Eigen::internal::packet_traits<T>::size * static_cast<int>(sizeof(T));
#if defined(__AVX512F__)
    static_assert(register_bytes == 64, "Eigen's register here is an AVX-512 one");
    if constexpr (std::is_same_v<T, float>)
        return _mm512_cmp_ps_mask(_mm512_loadu_ps(p), _mm512_set1_ps(threshold), _CMP_GT_OQ);
    else return _mm512_cmp_pd_mask(_mm512_loadu_pd(p), _mm512_set1_pd(threshold), _CMP_GT_OQ);
#elif defined(__AVX__)
    static_assert(register_bytes == 32, "Eigen's register here is an AVX one");
    if constexpr (std::is_same_v<T, float>)
        return static_cast<unsigned>(
            _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(p), _mm256_set1_ps(threshold), _CMP_GT_OQ)));
    else
        return static_cast<unsigned>(
            _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(p), _mm256_set1_pd(threshold), _CMP_GT_OQ)));
#else
    static_assert(register_bytes == 16, "Eigen's register here is an SSE one");
    if constexpr (std::is_same_v<T, float>)
        return static_cast<unsigned>(_mm_movemask_ps(_mm_cmpgt_ps(_mm_loadu_ps(p), _mm_set1_ps(threshold))));
    else return static_cast<unsigned>(_mm_movemask_pd(_mm_cmpgt_pd(_mm_loadu_pd(p), _mm_set1_pd(threshold))));
#endif
}

// The highest scores of a row are its highest weights. Most key blocks hold none of the
// current top scores, so a block is scanned only when its max beats the threshold (the
// lowest score kept, once `top` are kept; a masked score, `lowest`, never does), and then a
// vector register at a time: only the lanes above the threshold are looked at, in key order.
template <typename T>
void scan_top_keys(std::vector<std::pair<T, Eigen::Index>>& best, std::size_t top, const T* row, Eigen::Index cols,
                   Eigen::Index first_key, T block_max, T lowest) {
    constexpr Eigen::Index lanes = Eigen::internal::packet_traits<T>::size;
    static_assert(lanes <= 32, "lanes_above returns 32 bits");
    T threshold = best.size() < top ? lowest : best.back().first;
    if (!(block_max > threshold)) return;
    const auto consider = [&](Eigen::Index c) {
        if (row[c] > threshold) {  // the threshold may have risen since the register was compared
            offer(best, top, row[c], first_key + c);
            if (best.size() == top) threshold = best.back().first;
        }
    };
    Eigen::Index c = 0;
    for (; c + lanes <= cols; c += lanes)
        for (unsigned bits = lanes_above(row + c, threshold); bits != 0; bits &= bits - 1)
            consider(c + std::countr_zero(bits));
    for (; c < cols; ++c) consider(c);
}

// K laid out for the scores' product: per key block of stream_key_block keys, its d_k ×
// stream_key_block transpose (the last block's missing keys are 0), so that a row of the
// block's Kᵀ is a row in memory. Made once per key matrix, it is read by every query block
// (Eigen would copy each key block again for each). Its n·d_k numbers are the price; with a
// window narrower than two key blocks a block is read by one or two query blocks, and Eigen
// is used instead.
template <typename T>
MatrixT<T> key_panels_for(const RowsView<T>& k) {
    const Eigen::Index blocks = (k.rows() + stream_key_block - 1) / stream_key_block;
    return MatrixT<T>(blocks * k.cols(), stream_key_block);
}
// Block b of `panels`: each block is written by one thread, and every number of it is.
template <typename T>
void fill_key_panel(const RowsView<T>& k, MatrixT<T>& panels, Eigen::Index b) {
    const Eigen::Index d_k = k.cols(), keys = std::min(stream_key_block, k.rows() - b * stream_key_block);
    panels.block(b * d_k, 0, d_k, keys) = k.middleRows(b * stream_key_block, keys).transpose();
    panels.block(b * d_k, keys, d_k, stream_key_block - keys).setZero();
}

template <typename T>
bool wants_panels(const StreamOptions& options, Eigen::Index keys) {
    return own_products_for<T>(keys) && (options.window == 0 || options.window >= 2 * stream_key_block);
}

// pass 1: S = Q_block·K_blockᵀ / √d_k, with the keys a query may not see (outside its window,
// padding) set to `lowest`, whose exp(lowest − m) is 0. The keys after a query (causal) are
// left as they are, some never computed: a row is read only up to its own key (query_block's
// `visible`). With key panels (key % stream_key_block == 0), all stream_key_block columns of
// the block's panel are computed; those past `cols` are never read.
template <typename T>
void block_scores(const RowsView<T>& q, const RowsView<T>& k, const T* panels, const StreamOptions& options,
                  Eigen::Index first, Eigen::Index rows, Eigen::Index key, Eigen::Index cols, MatrixT<T>& block, T lowest) {
    const T scale = static_cast<T>(options.scale);
    auto scores = block.topLeftCorner(rows, cols);
    if (panels) {
        const Eigen::Index d_k = q.cols();
        if constexpr (own_products<T>)  // panels come only where the kernels are (wants_panels)
            own_product<T, false>(q.data() + first * q.outerStride(), q.outerStride(),
                                  panels + (key / stream_key_block) * d_k * stream_key_block, stream_key_block,
                                  block.data(), block.cols(), rows, stream_key_block, d_k, scale,
                                  options.causal ? first - key : anywhere);
    } else {
        // The scale rides in the product: Eigen multiplies each finished dot product by it as
        // it stores it, the same rounding as scaling afterwards, without another pass.
        scores.noalias() = scale * (q.middleRows(first, rows) * k.middleRows(key, cols).transpose());
    }
    if (options.window > 0)  // keys at distance W or more (before the query; after it too unless causal)
        for (Eigen::Index r = 0; r < rows; ++r)
            for (Eigen::Index c = 0; c < cols; ++c) {
                const Eigen::Index distance = first + r - (key + c);
                if (distance >= options.window || (!options.causal && -distance >= options.window)) scores(r, c) = lowest;
            }
    if (options.padding)
        for (Eigen::Index c = 0; c < cols; ++c)
            if ((*options.padding)[static_cast<std::size_t>(key + c)]) scores.col(c).setConstant(lowest);
}

// e^x for a vector register of T: Eigen's for floats, ours without a division for doubles
// (packet_exp.hpp).
template <typename Packet>
Packet packet_exp(const Packet& x) {
    if constexpr (sizeof(typename Eigen::internal::unpacket_traits<Packet>::type) == 8)
        return exp_without_division(x);
    else
        return Eigen::internal::pexp(x);
}

// The largest of a block row's `cols` scores (at least `lowest`): one pass, a lane-wise max and
// then across the lanes. Two registers of maxima take turns, so that each step need not wait
// for the one before it.
template <typename T>
T block_row_max(const T* scores, Eigen::Index cols, T lowest) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;  // one vector register of T
    constexpr Eigen::Index lanes = ei::packet_traits<T>::size;
    const Eigen::Index whole = cols - cols % lanes;
    T block_max = lowest;
    if (whole > 0) {
        Packet m0 = ei::ploadu<Packet>(scores), m1 = m0;
        Eigen::Index c = lanes;
        for (; c + lanes < whole; c += 2 * lanes) {
            m0 = ei::pmax(m0, ei::ploadu<Packet>(scores + c));
            m1 = ei::pmax(m1, ei::ploadu<Packet>(scores + c + lanes));
        }
        if (c < whole) m0 = ei::pmax(m0, ei::ploadu<Packet>(scores + c));
        block_max = ei::predux_max(ei::pmax(m0, m1));
    }
    for (Eigen::Index c = whole; c < cols; ++c) block_max = std::max(block_max, scores[c]);
    return block_max;
}

// passes 2 and 3 for row r of a block: the running max m grows to the block's, what came
// before is rescaled by e^(m_old − m_new), and the block's e^(s − m) join the running sum l,
// the accumulated values (pass 4) and Σ e^(s − m)(s − m), which gives the entropy.
// Until a row has seen a key it may see, its max is at most `lowest` and what it summed is
// only hidden keys: it is dropped, not rescaled (the rescaling would multiply 0 by an overflow).
template <typename T>
T online_softmax_row(Scratch<T>& s, Eigen::Index r, Eigen::Index cols, T lowest) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;  // one vector register of T
    constexpr Eigen::Index lanes = ei::packet_traits<T>::size;
    const T* scores = &s.scores(r, 0);
    T* probs = &s.probs(r, 0);
    const Eigen::Index whole = cols - cols % lanes;
    const T block_max = block_row_max(scores, cols, lowest);
    const T old_max = s.max(r);
    const T new_max = std::max(old_max, block_max);
    const bool fresh = !(old_max > lowest);  // the first block, or nothing seen before
    // Once a row's max stops growing (most blocks), e^(m_old − m_new) = e^0 = 1 and there is
    // nothing to rescale.
    const bool same_max = !fresh && new_max == old_max;
    const T rescale = fresh ? T(0) : same_max ? T(1) : std::exp(old_max - new_max);
    // The second pass: p = e^(s − m) is stored for the values' product, and the block's Σ p and
    // Σ p·(s − m) are summed as it goes, lane by lane (two registers taking turns, as for the
    // max), then across the lanes. The last
    // cols % lanes go through the same vector exp, padded, so that a score gives the same
    // weight wherever it falls in the block.
    const Packet shift = ei::pset1<Packet>(new_max);
    const Packet zero = ei::pset1<Packet>(T(0));
    Packet sum0 = zero, sum1 = zero, spread0 = zero, spread1 = zero;
    const auto step = [&](Eigen::Index c, Packet& sum, Packet& spread) {
        const Packet x = ei::psub(ei::ploadu<Packet>(scores + c), shift);
        const Packet p = packet_exp(x);
        ei::pstoreu(probs + c, p);
        sum = ei::padd(sum, p);
        spread = ei::padd(spread, ei::pmul(p, x));
    };
    Eigen::Index c = 0;
    for (; c + lanes < whole; c += 2 * lanes) {
        step(c, sum0, spread0);
        step(c + lanes, sum1, spread1);
    }
    if (c < whole) step(c, sum0, spread0);
    T block_sum = ei::predux(ei::padd(sum0, sum1)), block_spread = ei::predux(ei::padd(spread0, spread1));
    if (whole < cols) {
        alignas(64) T x[lanes] = {}, p[lanes];
        for (Eigen::Index c = whole; c < cols; ++c) x[c - whole] = scores[c] - new_max;
        ei::pstoreu(p, packet_exp(ei::ploadu<Packet>(x)));
        for (Eigen::Index c = whole; c < cols; ++c) {
            probs[c] = p[c - whole];
            block_sum += probs[c];
            block_spread += probs[c] * x[c - whole];
        }
    }
    const T old_sum = s.sum(r);
    // Σ e^(s−m_old)(s − m_old) becomes Σ e^(s−m_new)(s − m_new) = rescale·(that − Δm·l)
    if (same_max) {
        s.spread(r) += block_spread;
        s.sum(r) = old_sum + block_sum;
        return block_max;
    }
    s.spread(r) = fresh ? block_spread : rescale * (s.spread(r) - (new_max - old_max) * old_sum) + block_spread;
    s.sum(r) = fresh ? block_sum : rescale * old_sum + block_sum;
    s.max(r) = new_max;
    s.acc.row(r) *= rescale;
    return block_max;
}

// The summary of each row of a finished block: its top keys with their weights
// e^(s − m)/l, its largest weight 1/l (the max key has e^0), its entropy, its context.
// A row that saw no key at all (every key hidden: padding) has weights 0, entropy 0 and a
// context of 0, as in the trace.
template <typename T>
void finish_block(const Scratch<T>& s, const StreamOptions& options, Eigen::Index first, Eigen::Index rows,
                  StreamResult& result, T lowest) {
    for (Eigen::Index r = 0; r < rows; ++r) {
        if (!(s.max(r) > lowest)) {
            QuerySummary& out = result.queries[static_cast<std::size_t>(first + r)];
            out.max_weight = out.entropy = 0;
            if (options.context) result.context.row(first + r).setZero();
            continue;
        }
        const double m = static_cast<double>(s.max(r));
        const double l = static_cast<double>(s.sum(r));
        QuerySummary& out = result.queries[static_cast<std::size_t>(first + r)];
        for (const auto& [score, index] : s.best[static_cast<std::size_t>(r)])
            out.top.push_back({index, std::exp(static_cast<double>(score) - m) / l});
        out.max_weight = 1 / l;
        // H = −Σ a ln a with a = e^(s−m)/l: H = ln l − Σ a (s − m)
        out.entropy = std::max(0.0, std::log(l) - static_cast<double>(s.spread(r)) / l);
        if (options.context) result.context.row(first + r) = (s.acc.row(r) / s.sum(r)).template cast<double>();
    }
}

// pass 4: acc += P·V for the block's rows and keys.
template <typename T>
void add_weighted_values(Scratch<T>& s, const RowsView<T>& v, const StreamOptions& options, Eigen::Index first,
                         Eigen::Index rows, Eigen::Index key, Eigen::Index cols) {
    const Eigen::Index width = v.cols();
    if constexpr (own_products<T>)  // compiled only in the copies that have the kernels
        if (own_products_for<T>(v.rows()) && whole_registers<T>(width)) {
            own_product<T, true>(s.probs.data(), s.probs.cols(), v.data() + key * v.outerStride(), v.outerStride(),
                                 s.acc.data(), s.acc.cols(), rows, width, cols, T(1),
                                 options.causal ? first - key : anywhere);
            return;
        }
    s.acc.topRows(rows).noalias() += s.probs.topLeftCorner(rows, cols) * v.middleRows(key, cols);
}

// One query block [first, first + rows) against every key it may see, one key block at a time.
template <typename T>
void query_block(const RowsView<T>& q, const RowsView<T>& k, const T* panels, const RowsView<T>& v,
                 const StreamOptions& options, Eigen::Index first, Eigen::Index rows, Scratch<T>& s, StreamResult& result) {
    constexpr T lowest = -std::numeric_limits<T>::max();  // a masked score: exp(lowest − m) = 0
    // Causal: keys after the block's last query are never seen, so their blocks are skipped;
    // a window skips the keys further than W from every query of the block.
    Eigen::Index key_begin = 0, key_end = options.causal ? first + rows : k.rows();
    if (options.window > 0) {
        key_begin = std::max<Eigen::Index>(0, first - options.window + 1);
        if (!options.causal) key_end = std::min(k.rows(), first + rows + options.window - 1);
    }
    // Key panels go by whole key blocks; the keys before the window in the first one are
    // masked like the others outside it.
    if (panels) key_begin -= key_begin % stream_key_block;
    s.max.head(rows).setConstant(-std::numeric_limits<T>::infinity());
    s.sum.head(rows).setZero();
    s.spread.head(rows).setZero();
    s.acc.topRows(rows).setZero();
    for (Eigen::Index r = 0; r < rows; ++r) s.best[static_cast<std::size_t>(r)].clear();

    for (Eigen::Index key = key_begin; key < key_end; key += stream_key_block) {
        const Eigen::Index cols = std::min(stream_key_block, key_end - key);
        block_scores<T>(q, k, panels, options, first, rows, key, cols, s.scores, lowest);
        for (Eigen::Index r = 0; r < rows; ++r) {
            // Causal: the keys after the query are hidden; on the diagonal block a row takes
            // the exps of the keys up to its own only, and the rest of its weights are 0.
            const Eigen::Index visible =
                options.causal ? std::clamp<Eigen::Index>(first + r + 1 - key, 0, cols) : cols;
            if (visible < cols) std::fill(&s.probs(r, visible), &s.probs(r, 0) + cols, T(0));
            const T block_max = online_softmax_row(s, r, visible, lowest);
            scan_top_keys(s.best[static_cast<std::size_t>(r)], options.top, &s.scores(r, 0), visible, key, block_max,
                          lowest);
        }
        // pass 4: the weighted sum of this block's values
        add_weighted_values(s, v, options, first, rows, key, cols);
    }
    finish_block(s, options, first, rows, result, lowest);
}

// K's panels, one per distinct key matrix (heads may share one), when this copy of the kernels
// computes the scores itself; `panel_of[h]`: head h's. Empty when it does not.
template <typename T>
struct KeyPanels {
    std::vector<MatrixT<T>> panels;
    std::vector<std::size_t> panel_of;
};

template <typename T>
KeyPanels<T> key_panels_of(const std::vector<StreamHead<T>>& heads, const StreamOptions& options, double d_k) {
    KeyPanels<T> out;
    out.panel_of.assign(heads.size(), 0);
    if (heads.empty() || !wants_panels<T>(options, heads.front().k.rows())) return out;
    std::vector<std::size_t> panel_head;  // a head that reads each panel
    for (std::size_t head = 0; head < heads.size(); ++head) {
        const auto& k = heads[head].k;
        std::size_t same = 0;
        while (same < head && heads[same].k.data() != k.data()) ++same;
        if (same < head) {
            out.panel_of[head] = out.panel_of[same];
        } else {
            out.panel_of[head] = out.panels.size();
            panel_head.push_back(head);
            out.panels.push_back(key_panels_for(k));
        }
    }
    // Their blocks are copies, spread over the threads (the memory's first touch too).
    const Eigen::Index n_keys = heads.front().k.rows();
    const Eigen::Index key_blocks = (n_keys + stream_key_block - 1) / stream_key_block;
    const auto pieces = static_cast<Eigen::Index>(out.panels.size()) * key_blocks;
    const double numbers = static_cast<double>(out.panels.size()) * static_cast<double>(n_keys) * d_k;
#pragma omp parallel for schedule(static) if (worth_threads(4 * numbers))
    for (Eigen::Index piece = 0; piece < pieces; ++piece) {
        const auto p = static_cast<std::size_t>(piece / key_blocks);
        fill_key_panel(heads[panel_head[p]].k, out.panels[p], piece % key_blocks);
    }
    return out;
}

// options.rows_done, in order: how many heads of each query block are finished, and how far
// from the start all blocks are; the rows finished from the start are reported once each.
class InOrder {
public:
    InOrder(const StreamOptions& options, Eigen::Index blocks, Eigen::Index heads, Eigen::Index n)
        : options_(options), finished_(options.rows_done ? static_cast<std::size_t>(blocks) : 0, 0), blocks_(blocks),
          heads_(heads), n_(n) {}
    bool wanted() const { return static_cast<bool>(options_.rows_done); }
    // One head of `block` is done (any thread).
    void done(Eigen::Index block, const std::vector<StreamResult>& results) {
        const std::lock_guard lock(reporting_);
        ++finished_[static_cast<std::size_t>(block)];
        const Eigen::Index from = reported_;
        while (reported_ < blocks_ && finished_[static_cast<std::size_t>(reported_)] == heads_) ++reported_;
        if (reported_ > from) {
            const Eigen::Index end = std::min(n_, reported_ * stream_query_block);
            options_.rows_done(results, static_cast<std::size_t>(from * stream_query_block),
                               static_cast<std::size_t>(end - from * stream_query_block));
        }
    }

private:
    const StreamOptions& options_;
    std::vector<Eigen::Index> finished_;
    Eigen::Index reported_ = 0;
    std::mutex reporting_;
    Eigen::Index blocks_, heads_, n_;
};

}  // namespace

template <typename T>
std::vector<StreamResult> stream_heads(const std::vector<StreamHead<T>>& heads, const StreamOptions& options) {
    const auto h_count = static_cast<Eigen::Index>(heads.size());
    const Eigen::Index n = h_count == 0 ? 0 : heads.front().q.rows();
    const Eigen::Index d_v = h_count == 0 ? 0 : heads.front().v.cols();
    std::vector<StreamResult> results(heads.size());
    for (StreamResult& result : results) {
        result.queries.resize(static_cast<std::size_t>(n));
        if (options.context) result.context.resize(n, d_v);
    }
    const Eigen::Index blocks = (n + stream_query_block - 1) / stream_query_block;
    const std::size_t all_rows = static_cast<std::size_t>(n) * heads.size();
    std::atomic<std::size_t> done{0};
    RegionErrors errors;  // the scratch, the products and the top lists allocate
    InOrder in_order(options, blocks, h_count, n);
    // Every query against every key (half of them when causal), a dot product over d_k, an
    // exp and a weighted sum over d_v each, for every head.
    const double d_k = h_count == 0 ? 0 : static_cast<double>(heads.front().q.cols());
    const double work = static_cast<double>(h_count) * static_cast<double>(n) * static_cast<double>(n) *
                        (options.causal ? 0.5 : 1.0) * (2.0 * d_k + 2.0 * static_cast<double>(d_v) + 10.0);
    const KeyPanels<T> key_panels = key_panels_of(heads, options, d_k);
#pragma omp parallel if (worth_threads(work))
    {
        const FlushDenormals flush;
        std::optional<Scratch<T>> scratch;
        errors.run([&] { scratch.emplace(stream_query_block, stream_key_block, d_v, options.top); });
        // One turn is one query block of one head. Dynamic: in causal mode the later blocks see
        // more keys and take longer, so they are handed out first (every head's), leaving the
        // short ones to even out the end.
#pragma omp for schedule(dynamic, 1)
        for (Eigen::Index turn = 0; turn < blocks * h_count; ++turn) {
            if (!scratch) continue;  // its allocation failed: the error is kept
            errors.run([&] {
                const Eigen::Index head = turn % h_count, order = turn / h_count;
                // Causal blocks longest first, unless the rows are wanted in order.
                const Eigen::Index block = options.causal && !in_order.wanted() ? blocks - 1 - order : order;
                const Eigen::Index first = block * stream_query_block;
                const Eigen::Index rows = std::min(stream_query_block, n - first);
                const StreamHead<T>& h = heads[static_cast<std::size_t>(head)];
                const auto panel = key_panels.panel_of[static_cast<std::size_t>(head)];
                const T* panels = key_panels.panels.empty() ? nullptr : key_panels.panels[panel].data();
                query_block(h.q, h.k, panels, h.v, options, first, rows, *scratch, results[static_cast<std::size_t>(head)]);
                const std::size_t now = done += static_cast<std::size_t>(rows);
                if (options.progress && omp_get_thread_num() == 0) options.progress(now, all_rows);
                if (in_order.wanted()) in_order.done(block, results);
            });
        }
    }
    errors.rethrow();
    return results;
}

template <typename T>
StreamResult stream_attention(const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v,
                              const StreamOptions& options) {
    // Qualified: StreamOptions brings the public stream_heads in by argument-dependent lookup.
    return std::move(ATTNTRACE_ISA::stream_heads<T>({StreamHead<T>{rows_view(q), rows_view(k), rows_view(v)}}, options).front());
}

template <typename T>
double stream_exp_rate(int threads) {
    namespace ei = Eigen::internal;
    using Packet = typename ei::packet_traits<T>::type;
    constexpr Eigen::Index lanes = ei::packet_traits<T>::size, size = 4096, rounds = 2000;
    double best = 0;
    for (int attempt = 0; attempt < 3; ++attempt) {
        std::atomic<std::size_t> kept{0};  // a count the compiler cannot drop
        const double start = omp_get_wtime();
#pragma omp parallel num_threads(threads)
        {
            std::vector<T> x(size), y(size);
            for (Eigen::Index i = 0; i < size; ++i) x[static_cast<std::size_t>(i)] = T(-20) * T(i) / T(size);  // e^-20 … 1
            for (Eigen::Index round = 0; round < rounds; ++round) {
                for (Eigen::Index i = 0; i + lanes <= size; i += lanes)
                    ei::pstoreu(y.data() + i, packet_exp(ei::ploadu<Packet>(x.data() + i)));
                asm volatile("" ::: "memory");  // every round is done: x and y may have changed
            }
            kept += static_cast<std::size_t>(y[size / 2] > T(0));
        }
        const double seconds = omp_get_wtime() - start;
        if (kept > 0) best = std::max(best, static_cast<double>(threads) * size * rounds / seconds);
    }
    return best;
}

ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_INSTANTIATE, float)
ATTNTRACE_STREAMING_FUNCTIONS(ATTNTRACE_INSTANTIATE, double)

}  // namespace ATTNTRACE_ISA
}  // namespace attntrace

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
