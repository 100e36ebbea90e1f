// The hot kernels, listed once: those of the long inputs' path (--summary), the projections
// and the streaming loop. Each copy of them (attention/isa.hpp: one per instruction set)
// defines these templates for float and double, projections.cpp the first list and
// streaming.cpp the second, streaming_backward_kernels.cpp the third, and dispatch.cpp gives them their public names (kernels.hpp,
// streaming.hpp, streaming_backward.hpp), each forwarding to the copy this CPU runs. All three expand the same lists,
// so a kernel added here is instantiated, declared and forwarded everywhere at once. (The
// trace path's kernels, passes 2 to 4, are compiled once, in kernels.cpp.)
//
// An entry is X(T, return type, name, (parameters), (arguments)), with T the number type.
#pragma once

#include "attention/kernels.hpp"
#include "attention/streaming.hpp"
#include "attention/streaming_backward.hpp"

// projections.cpp: pass 1 of kernels.hpp, the products by the weights.
#define ATTNTRACE_PROJECTION_FUNCTIONS(X, T)                                                                \
    X(T, MatrixT<T>, project, (const MatrixT<T>& x, const MatrixT<T>& w), (x, w))                           \
    X(T, std::vector<MatrixT<T>>, project_filled,                                                          \
      (MatrixT<T> & x, const std::vector<MatrixT<T>>& w, const RowFill& fill, const RowsDone<T>& done),    \
      (x, w, fill, done))

// streaming.cpp: the streaming path of streaming.hpp.
#define ATTNTRACE_STREAMING_FUNCTIONS(X, T)                                                                 \
    X(T, StreamResult, stream_attention,                                                                   \
      (const MatrixT<T>& q, const MatrixT<T>& k, const MatrixT<T>& v, const StreamOptions& options),       \
      (q, k, v, options))                                                                                  \
    X(T, std::vector<StreamResult>, stream_heads,                                                          \
      (const std::vector<StreamHead<T>>& heads, const StreamOptions& options), (heads, options))           \
    X(T, double, stream_exp_rate, (int threads), (threads))

// streaming_backward_kernels.cpp: the streaming backward pass's kernels (streaming_backward.hpp).
#define ATTNTRACE_STREAMING_BACKWARD_FUNCTIONS(X, T)                                                        \
    X(T, MatrixT<T>, stream_forward_lse,                                                                   \
      (const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries, const BackwardPlan& plan, \
       const ContextBlockDone<T>& done),                                                                   \
      (heads, queries, plan, done))                                                                        \
    X(T, void, stream_backward_heads,                                                                      \
      (const std::vector<BackwardHead<T>>& heads, const BackwardQueries<T>& queries,                       \
       const BackwardSeed<T>& seed, const BackwardPlan& plan, MatrixT<T>& d_queries,                       \
       const KeyBlockDone<T>& done),                                                                       \
      (heads, queries, seed, plan, d_queries, done))                                                       \
    X(T, MatrixT<T>, backward_project,                                                                     \
      (const RowsView<T>& x, const MatrixT<T>& w, const Eigen::Matrix<T, 1, Eigen::Dynamic>* bias),        \
      (x, w, bias))                                                                                        \
    X(T, void, backward_product,                                                                           \
      (const RowsView<T>& a, bool transpose_a, const RowsView<T>& b, bool transpose_b, MatrixT<T>& out,    \
       bool add),                                                                                          \
      (a, transpose_a, b, transpose_b, out, add))

// X for the lists: the explicit instantiation of one entry for T.
#define ATTNTRACE_INSTANTIATE(T, R, name, params, args) template R name<T> params;
// ... and the declaration of the template (with T the template's parameter).
#define ATTNTRACE_DECLARE(T, R, name, params, args) \
    template <typename T>                           \
    R name params;
