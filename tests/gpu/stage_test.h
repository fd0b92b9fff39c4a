// Helpers for the stage tests on the GPU: what main_stages.cpp set up — the World, this
// rank's CUDA context (GPU node-local rank % GPUs), and the host-staged communicator over the
// world on that context, from which the grids of the GPU models split their rows and columns.
#pragma once

#include "comm/communicator.h"
#include "core/context.h"

namespace stage_test {

/// The staged communicator over every rank, for buffers on this rank's GPU ("world").
optimus::comm::Communicator& device_world();

}  // namespace stage_test
