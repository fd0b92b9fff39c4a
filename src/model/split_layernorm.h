// LayerNorm over rows whose columns are split over the ranks of one communicator (chapter 3 uses
// it along the grid's rows, the 3D layers along the cube line that holds a row's columns, so it
// lives here, below both): the serial kernel's two passes, each rank over its own columns, with
// the partial statistics all-reduced over the group between them. The pieces are the core ops
// the serial LayerNorm is made of.
#pragma once

#include "comm/communicator.h"
#include "core/context.h"
#include "core/ops.h"

namespace optimus::model {

/// out, inp (N, Cl): N rows, this rank's Cl of their C columns; mean, rstd (N): the statistics over
/// all C columns; weight, bias (Cl): the parameters of my columns. Partial sums → all-reduce →
/// partial squared deviations → all-reduce → normalise. Collective over `group` (the ranks that
/// share the rows): 2 all-reduces of N floats.
void split_layernorm_forward(const core::Context& ctx, comm::Communicator& group, float* out, float* mean, float* rstd,
                             const float* inp, const float* weight, const float* bias, int N, int Cl, int C, float eps);
/// add_to: dinp (N, Cl) += gradient; dweight, dbias (Cl) += the sums over my N rows. Σ g and Σ g·x̂
/// over the row travel together: 1 all-reduce over `group` of 2N floats. Scratch: 2N floats
/// (communication).
void split_layernorm_backward(const core::Context& ctx, comm::Communicator& group, const core::LayerGrads& add_to,
                              const float* dout, const float* inp, const float* weight, const float* mean,
                              const float* rstd, int N, int Cl, int C);

}  // namespace optimus::model
