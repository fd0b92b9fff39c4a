// The two conjugate operators of Megatron's tensor parallelism (chapter 2), in the Megatron
// vocabulary, as the boundary of a parallel region:
//   f: identity forward, all-reduce backward — where replicated activations enter a parallel region;
//   g: all-reduce forward, identity backward — where partial sums leave it.
// Each is the other's transpose: the gradient of "sum over ranks" is "copy to every rank".
// With sequence parallelism (chapter 5) the activations outside the regions are not replicated
// but split by rows: rank r holds rows [r·N/p, (r+1)·N/p) of the (N, C) residual stream. The pair
// becomes (Korthikanti et al. call them g and ḡ):
//   f: all-gather forward, reduce-scatter backward — my rows in, every row out;
//   g: reduce-scatter forward, all-gather backward — partial sums of every row in, my rows' sums out.
// Again each is the other's transpose, and an all-gather plus a reduce-scatter move what one
// all-reduce moves. A Region carries the communicator and the mode, so the same layers serve both.
#pragma once

#include <cstdint>

#include "comm/communicator.h"
#include "core/context.h"
#include "core/ops.h"
#include "core/tensor.h"

namespace optimus::tp1d {

/// The boundary of a parallel region over the ranks of `tp`. Sizes passed are the full ones (N
/// rows, C columns); "mine" is this rank's rows of the residual stream: all N of them, or with
/// sequence parallelism its N/p. With sequence parallelism the region owns two (N, C) buffers,
/// allocated once per batch shape by allocate(): the receive buffer of an all-gather (every row)
/// and the send buffer of a reduce-scatter (my partial sums of every row).
class Region {
 public:
  Region(comm::Communicator& tp, bool sequence_parallel) : tp_(&tp), sp_(sequence_parallel) {}

  comm::Communicator& comm() const { return *tp_; }
  bool sequence_parallel() const { return sp_; }
  /// My rows of N: N, or N/p with sequence parallelism.
  int64_t rows(int64_t N) const { return sp_ ? N / tp_->size() : N; }
  /// With sequence parallelism the two (N, C) communication buffers; nothing without.
  void allocate(const core::Context& ctx, int64_t N, int64_t C);
  void release() { gathered_ = core::Buffer{}, partial_ = core::Buffer{}; }

  /// f forward: the region's input, every row (N, C): `mine` itself, or every rank's rows gathered.
  const float* f_forward(const float* mine, int64_t N, int64_t C);
  /// Where a backward pass computes its partial gradient of the region's input (N, C), which
  /// f_backward then sums: `dmine` itself (the caller passes it zeroed, as to every backward op),
  /// or with sequence parallelism the partial-sum buffer, zeroed here.
  float* partial(const core::Context& ctx, float* dmine);
  /// The same, `dmine` zeroed here too.
  float* zeroed_partial(const core::Context& ctx, core::Buffer& dmine);
  /// f backward: dmine = my rows of the sum over ranks of `partial`: an all-reduce in place, or a
  /// reduce-scatter.
  void f_backward(float* dmine, const float* partial, int64_t N, int64_t C);

  /// Where a forward pass computes its partial sums of the region's output (N, OC): `out` itself,
  /// or with sequence parallelism the partial-sum buffer.
  float* g_partial(float* out) const;
  /// g forward: out (my rows, OC) = my rows of the sum over ranks of `partial` (N, OC).
  void g_forward(float* out, const float* partial, int64_t N, int64_t OC);
  /// g backward: the gradient of every row (N, OC): `dmine` itself, or every rank's rows gathered.
  const float* g_backward(const float* dmine, int64_t N, int64_t OC);

 private:
  comm::Communicator* tp_;
  bool sp_;
  core::Buffer gathered_, partial_;  // (N, C) each, sequence parallelism only
};

}  // namespace optimus::tp1d
