// The two conjugate operators of Megatron's tensor parallelism (chapter 2), in the
// Megatron vocabulary. In a hand-written forward and backward pass each is a pair of functions:
//   f: identity forward, all-reduce backward — where replicated activations enter a parallel region;
//   g: all-reduce forward, identity backward — where partial sums leave it.
// Each is the other's transpose: the gradient of "sum over ranks" is "copy to every rank".
#pragma once

#include <cstdint>

#include "comm/communicator.h"

namespace optimus::tp1d {

/// f forward: the replicated input is used as it is on every rank.
inline void f_forward() {}
/// f backward: every rank holds a partial gradient of the replicated input; sum them (N·C floats).
inline void f_backward(comm::Communicator& tp, float* grad, int64_t n) {
  tp.all_reduce(grad, n);
}

/// g forward: every rank holds a partial sum of the output; sum them so all hold the whole.
inline void g_forward(comm::Communicator& tp, float* x, int64_t n) {
  tp.all_reduce(x, n);
}
/// g backward: the gradient of the replicated output is already the gradient of every partial sum.
inline void g_backward() {}

// With sequence parallelism (chapter 5) the activations outside the parallel regions are not
// replicated but split by rows: rank r holds rows [r·N/p, (r+1)·N/p) of the (N, C) residual stream.
// The pair becomes (Korthikanti et al. call them g and ḡ):
//   f_sp: all-gather forward, reduce-scatter backward — my rows in, every row out;
//   g_sp: reduce-scatter forward, all-gather backward — partial sums of every row in, my rows' sums out.
// Again each is the other's transpose, and an all-gather plus a reduce-scatter move what one
// all-reduce moves, so the communication volume is f's and g's.

/// f_sp forward: full (N, C) = every rank's rows (N/p, C) side by side; n = (N/p)·C per rank.
inline void f_sp_forward(comm::Communicator& tp, float* full, const float* mine, int64_t n) {
  tp.all_gather(full, mine, n);
}
/// f_sp backward: my rows of the sum over ranks of the partial gradients of every row.
inline void f_sp_backward(comm::Communicator& tp, float* mine, const float* full_partial, int64_t n) {
  tp.reduce_scatter(mine, full_partial, n);
}

/// g_sp forward: my rows (N/p, C) of the sum over ranks of every rank's partial (N, C).
inline void g_sp_forward(comm::Communicator& tp, float* mine, const float* full_partial, int64_t n) {
  tp.reduce_scatter(mine, full_partial, n);
}
/// g_sp backward: the gradient of every row, gathered from its owners, is every partial sum's.
inline void g_sp_backward(comm::Communicator& tp, float* full, const float* mine, int64_t n) {
  tp.all_gather(full, mine, n);
}

}  // namespace optimus::tp1d
