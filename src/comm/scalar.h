// One number through a communicator: the loss sum of stage 3 and the squared gradient norm of
// stages 2 and 3 are single doubles that the core's reductions (core::sum, core::sum_squares)
// leave in host memory. A communicator takes buffers in the memory of its context (comm/
// device_comm.h): MPI host memory, NCCL and the staged communicator GPU memory. This is the one
// place that bridges the two, so no stage needs to know which communicator it was given.
#pragma once

#include "comm/communicator.h"
#include "core/context.h"

namespace optimus::comm {

/// x reduced over the group of `comm`, returned on every rank. `ctx` is the context the
/// communicator was made for: on a CPU context the host double goes to the communicator as it is
/// (nothing is copied or allocated); on a CUDA context it travels through a one-element device
/// buffer (copy to the device, the collective, copy back); on a meta context it goes as on the CPU
/// and the result is NaN (a meta run has no values). Collective; records one all_reduce of 8 bytes
/// in the communicator's ledger in every case.
double all_reduce_scalar(Communicator& comm, const core::Context& ctx, double x, ReduceOp op = ReduceOp::sum);

}  // namespace optimus::comm
