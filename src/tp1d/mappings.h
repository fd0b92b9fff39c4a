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

}  // namespace optimus::tp1d
