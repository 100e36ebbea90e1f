// The streaming path (--summary): attention for long inputs without ever holding the n×n
// matrix. Queries go in blocks; for each block the keys stream past in blocks, and an online
// softmax keeps, per query row, a running max m, a running sum l = Σ exp(s − m), and the
// running weighted sum of values, all rescaled whenever m grows. Memory: O(n·d) for Q, K, V
// and the context, plus one block of scores per thread.
#pragma once

#include "core/matrix.hpp"
#include "core/types.hpp"

#include <cstddef>
#include <functional>
#include <vector>

namespace attntrace {

struct KeyWeight {
    Eigen::Index index = 0;  // 0-based key position
    double weight = 0;
};

// What the summary says about one query row.
struct QuerySummary {
    std::vector<KeyWeight> top;  // the largest weights, largest first (ties: lower index first)
    double max_weight = 0;
    double entropy = 0;          // −Σ_j a_j ln a_j, in nats: 0 = all on one key, ln n = uniform
};

struct StreamResult;

struct StreamOptions {
    bool causal = false;
    Eigen::Index window = 0;                  // > 0: keys j with i − W < j ≤ i (causal) or |i − j| < W
    const std::vector<bool>* padding = nullptr;  // per key: a padding token, never attended to
    double scale = 1;              // 1/√d_k (1 in plain mode)
    std::size_t top = 3;
    bool context = false;          // also return Z = A·V
    // Called now and then with (rows done, rows in all), from one thread at a time.
    std::function<void(std::size_t, std::size_t)> progress;
    // For output written as it is computed (--format jsonl): called in query order, from one
    // thread at a time, with the results of every head and each run of rows [first, first +
    // count) that every head has finished, as soon as every row before them is. With it, query
    // blocks are handed out in order, the causal path's included.
    std::function<void(const std::vector<StreamResult>&, std::size_t first, std::size_t count)> rows_done;
};

struct StreamResult {
    std::vector<QuerySummary> queries;  // one per query row
    Matrix context;                     // n × d_v when options.context, else empty
};

// Q, K: n×d_k and V: n×d_v in the working precision T (float or double). Parallel over query
// blocks (OpenMP, dynamic schedule); each block is computed by one thread with the same
// instructions whatever the thread count, so results do not depend on it.
template <typename T>
StreamResult stream_attention(const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v,
                              const StreamOptions& options);

// Row-major numbers held elsewhere: a matrix, a mapped file, or some columns of a matrix (a
// head's), each row `stride` numbers after the one before.
template <typename T>
using RowsView = Eigen::Map<const MatrixT<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <typename T>
RowsView<T> rows_view(const T* data, Eigen::Index rows, Eigen::Index cols, Eigen::Index stride) {
    return RowsView<T>(data, rows, cols, Eigen::OuterStride<>(stride));
}
template <typename T>
RowsView<T> rows_view(const MatrixT<T>& m) {
    return rows_view(m.data(), m.rows(), m.cols(), m.cols());
}
// Columns [first, first + count) of `m`, in place.
template <typename T>
RowsView<T> column_view(const RowsView<T>& m, Eigen::Index first, Eigen::Index count) {
    return rows_view(m.data() + first, m.rows(), count, m.outerStride());
}

// Several heads at once: every (head, query block) pair is one piece of parallel work, so the
// heads run side by side. Each head's matrices are its own (a head's columns of Q, K and V);
// heads may share K and V (grouped-query attention). Every head's V has the same width.
template <typename T>
struct StreamHead {
    RowsView<T> q, k, v;
};
template <typename T>
std::vector<StreamResult> stream_heads(const std::vector<StreamHead<T>>& heads, const StreamOptions& options);

// e^x per second on `threads` threads through the streaming path's vectorised exp (Eigen's
// for floats, packet_exp.hpp's for doubles), each thread over 4096 numbers of its own kept in
// cache: the exp part of the machine's bound that `attntrace bench` reports.
template <typename T>
double stream_exp_rate(int threads);

inline constexpr Eigen::Index stream_query_block = 256;
inline constexpr Eigen::Index stream_key_block = 256;

}  // namespace attntrace
