#include "attention/streaming.hpp"

#include "util/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <omp.h>
#include <optional>
#include <xmmintrin.h>

namespace attntrace {
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

// One query block [first, first + rows) against every key it may see.
template <typename T>
void query_block(const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v,
                 const StreamOptions& options, Eigen::Index first, Eigen::Index rows,
                 Scratch<T>& s, StreamResult& result) {
    constexpr T lowest = -std::numeric_limits<T>::max();  // a masked score: exp(lowest − m) = 0
    const Eigen::Index n = k.rows();
    const T scale = static_cast<T>(options.scale);
    const Eigen::Index last_row = first + rows - 1;
    // Causal: keys after the block's last query are never seen, so their blocks are skipped.
    const Eigen::Index key_end = options.causal ? last_row + 1 : n;

    s.max.head(rows).setConstant(-std::numeric_limits<T>::infinity());
    s.sum.head(rows).setZero();
    s.spread.head(rows).setZero();
    s.acc.topRows(rows).setZero();
    for (Eigen::Index r = 0; r < rows; ++r) s.best[static_cast<std::size_t>(r)].clear();

    for (Eigen::Index key = 0; key < key_end; key += stream_key_block) {
        const Eigen::Index cols = std::min(stream_key_block, key_end - key);
        auto scores = s.scores.topLeftCorner(rows, cols);
        auto probs = s.probs.topLeftCorner(rows, cols);
        // pass 1: S = Q_block·K_blockᵀ / √d_k, the masked part set to `lowest`
        scores.noalias() = q.middleRows(first, rows) * k.middleRows(key, cols).transpose();
        scores *= scale;
        if (options.causal && key + cols - 1 > first)
            for (Eigen::Index r = 0; r < rows; ++r)
                for (Eigen::Index c = std::max<Eigen::Index>(0, first + r + 1 - key); c < cols; ++c)
                    scores(r, c) = lowest;
        for (Eigen::Index r = 0; r < rows; ++r) {
            // pass 2: the new running max, and the factor that rescales what came before
            const T block_max = scores.row(r).maxCoeff();
            const T old_max = s.max(r);
            const T new_max = std::max(old_max, block_max);
            const T rescale = std::exp(old_max - new_max);  // 0 on the first block
            // pass 3: exp(s − m) (vectorised), its sum, and Σ exp(s − m)(s − m) for the entropy
            probs.row(r) = (scores.row(r).array() - new_max).exp().matrix();
            const T block_sum = probs.row(r).sum();
            const T block_spread = (probs.row(r).array() * (scores.row(r).array() - new_max)).sum();
            const T old_sum = s.sum(r);
            // Σ e^(s−m_old)(s − m_old) becomes Σ e^(s−m_new)(s − m_new) = rescale·(that − Δm·l)
            s.spread(r) = old_sum > 0 ? rescale * (s.spread(r) - (new_max - old_max) * old_sum) + block_spread
                                      : block_spread;
            s.sum(r) = rescale * old_sum + block_sum;
            s.max(r) = new_max;
            s.acc.row(r) *= rescale;
            // the highest scores are the highest weights; most blocks hold none of them, and
            // a score must beat the current threshold (masked ones, `lowest`, never do)
            auto& best = s.best[static_cast<std::size_t>(r)];
            T threshold = best.size() < options.top ? lowest : best.back().first;
            if (block_max > threshold) {
                // in chunks: a vectorised max skips the chunks with nothing above the threshold
                constexpr Eigen::Index chunk = 32;
                const T* row = &scores(r, 0);
                for (Eigen::Index from = 0; from < cols; from += chunk) {
                    const Eigen::Index end = std::min(cols, from + chunk);
                    if (!(Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(row + from, end - from).maxCoeff() >
                          threshold))
                        continue;
                    for (Eigen::Index c = from; c < end; ++c)
                        if (row[c] > threshold) {
                            offer(best, options.top, row[c], key + c);
                            if (best.size() == options.top) threshold = best.back().first;
                        }
                }
            }
        }
        // pass 4: the weighted sum of this block's values
        s.acc.topRows(rows).noalias() += probs * v.middleRows(key, cols);
    }

    for (Eigen::Index r = 0; r < rows; ++r) {
        const double m = static_cast<double>(s.max(r));
        const double l = static_cast<double>(s.sum(r));
        QuerySummary& out = result.queries[static_cast<std::size_t>(first + r)];
        for (const auto& [score, index] : s.best[static_cast<std::size_t>(r)])
            out.top.push_back({index, std::exp(static_cast<double>(score) - m) / l});
        out.max_weight = 1 / l;  // the max key has exp(m − m) = 1
        // H = −Σ a ln a with a = e^(s−m)/l: H = ln l − Σ a (s − m)
        out.entropy = std::max(0.0, std::log(l) - static_cast<double>(s.spread(r)) / l);
        if (options.context)
            result.context.row(first + r) = (s.acc.row(r) / s.sum(r)).template cast<double>();
    }
}

}  // namespace

template <typename T>
StreamResult stream_attention(const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v,
                              const StreamOptions& options) {
    const Eigen::Index n = q.rows();
    StreamResult result;
    result.queries.resize(static_cast<std::size_t>(n));
    if (options.context) result.context.resize(n, v.cols());
    const Eigen::Index blocks = (n + stream_query_block - 1) / stream_query_block;
    std::atomic<std::size_t> done{0};
    RegionErrors errors;  // the scratch, the products and the top lists allocate
#pragma omp parallel
    {
        const FlushDenormals flush;
        std::optional<Scratch<T>> scratch;
        errors.run([&] { scratch.emplace(stream_query_block, stream_key_block, v.cols(), options.top); });
        // Dynamic: in causal mode the later blocks see more keys and take longer, so they are
        // handed out first, leaving the short ones to even out the end.
#pragma omp for schedule(dynamic, 1)
        for (Eigen::Index turn = 0; turn < blocks; ++turn) {
            if (!scratch) continue;  // its allocation failed: the error is kept
            errors.run([&] {
                const Eigen::Index block = options.causal ? blocks - 1 - turn : turn;
                const Eigen::Index first = block * stream_query_block;
                const Eigen::Index rows = std::min(stream_query_block, n - first);
                query_block(q, k, v, options, first, rows, *scratch, result);
                const std::size_t now = done += static_cast<std::size_t>(rows);
                if (options.progress && omp_get_thread_num() == 0) options.progress(now, static_cast<std::size_t>(n));
            });
        }
    }
    errors.rethrow();
    return result;
}

template StreamResult stream_attention<float>(const MatrixT<float>&, const MatrixT<float>&,
                                              const MatrixT<float>&, const StreamOptions&);
template StreamResult stream_attention<double>(const MatrixT<double>&, const MatrixT<double>&,
                                               const MatrixT<double>&, const StreamOptions&);

}  // namespace attntrace
