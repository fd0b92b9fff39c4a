// The layouts a run can use (serial, 1d, 2d): one place that checks the world against the layout
// and builds the model, so train, eval and bench share it. The model types have
// the same interface (forward, backward, clip_gradients, params, spec_of), so the code that uses
// them is written once, as templates. Here too the choice of communicator: the World's MPI one on
// the CPU; on a GPU a device communicator (NCCL or host-staged, comm/device_comm.h) over the same
// ranks, from which the grids split their row and column groups.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <utility>

#include "comm/device_comm.h"
#include "comm/grid.h"
#include "comm/world.h"
#include "core/errors.h"
#include "model/config.h"
#include "serial/gpt.h"
#include "tp1d/gpt.h"
#include "tp2d/gpt.h"
#include "tp2d/shard_2d.h"

namespace optimus::train {

/// The communicator a parallel model computes with, for memory on `ctx`: the World's own (MPI) on
/// a CPU context; on a CUDA context a device communicator over the same ranks, named "world" and
/// recording into the process's ledger like the World's, NCCL or staged as `device_comm` resolves
/// (collective; a forced nccl that cannot work is a ConfigError on every rank). `owned` keeps a
/// device communicator alive; it stays empty on the CPU.
inline comm::Communicator& model_communicator(comm::World& world, const core::Context& ctx,
                                              comm::DeviceComm device_comm,
                                              std::unique_ptr<comm::Communicator>& owned) {
  if (ctx.device == core::Device::cpu) return world.comm();
  owned = comm::make_device_communicator(MPI_COMM_WORLD, ctx, device_comm, "world");
  return *owned;
}

/// Throws core::ConfigError, on every rank alike, unless `layout` is a layout this world can run:
/// serial on 1 process, 1d on any number, 2d on a square number. Called first, before any file is
/// read, so a wrong launch is the first thing a user hears about.
inline void require_world_fits(const std::string& layout, comm::World& world) {
  if (layout == "serial" && world.size() != 1) {
    throw core::ConfigError("the serial layout runs on 1 process, but the world has " + std::to_string(world.size()) +
                            "; run without mpirun or choose --layout 1d or 2d");
  }
  if (layout == "2d") comm::Grid2D::side(world.size());  // a ConfigError unless the world is a square
  if (layout != "serial" && layout != "1d" && layout != "2d") {
    throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
  }
}

/// Builds the model of `layout` for this world (initialised from `seed`, its memory on `ctx`, its
/// collectives on model_communicator, recomputation and sequence parallelism as `memory` asks) and
/// returns body(model). A layout that does not fit the world, a size not divisible, or sequence
/// parallelism outside 1d is a core::ConfigError raised identically on every rank before any
/// communication.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, comm::DeviceComm device_comm, const model::MemoryOptions& memory,
               Body&& body) {
  require_world_fits(layout, world);
  if (layout != "1d") model::require_no_sequence_parallel(memory, layout);
  if (layout == "serial") {
    serial::GPT gpt(config, ctx, seed, memory);
    return body(gpt);
  }
  if (layout == "1d") {
    std::unique_ptr<comm::Communicator> device;  // outlives the grid and the model
    comm::Grid1D grid(model_communicator(world, ctx, device_comm, device));
    tp1d::GPT gpt(config, ctx, seed, grid, memory);
    return body(gpt);
  }
  if (layout == "2d") {
    // Before the grid's splits, so a model the grid cannot cut is one message, no collective.
    tp2d::check_divisible_2d(config, comm::Grid2D::side(world.size()));
    std::unique_ptr<comm::Communicator> device;
    comm::Grid2D grid(model_communicator(world, ctx, device_comm, device));
    tp2d::GPT gpt(config, ctx, seed, grid, memory);
    return body(gpt);
  }
  throw core::ConfigError("unknown layout '" + layout.substr(0, 40) + "'; choose serial, 1d or 2d");
}

/// The same, keeping every activation (no recomputation, no sequence parallelism).
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, comm::DeviceComm device_comm, Body&& body) {
  return with_model(layout, config, seed, world, ctx, device_comm, model::MemoryOptions{}, std::forward<Body>(body));
}

/// The same with the device communicator chosen automatically.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               const core::Context& ctx, Body&& body) {
  return with_model(layout, config, seed, world, ctx, comm::DeviceComm::automatic, std::forward<Body>(body));
}

/// Throws core::ConfigError, on every rank alike, unless the layout can split a batch of B
/// sequences of T tokens: 2D cuts the batch over the q rows of its grid, 1D with sequence
/// parallelism the B·T tokens over its p ranks. (The model checks it again.) With gradient
/// accumulation each pass runs on a micro-batch of B / grad_accum sequences, which must split.
inline void require_batch_fits(const std::string& layout, int B, comm::World& world, int T = 1,
                               bool sequence_parallel = false, int grad_accum = 1) {
  const int Bm = B / grad_accum;
  const std::string batch = grad_accum > 1 ? "the micro-batch (--batch " + std::to_string(B) + " / --grad-accum " +
                                                 std::to_string(grad_accum) + " = " + std::to_string(Bm) + ")"
                                           : "--batch " + std::to_string(B);
  const std::string choose = grad_accum > 1 ? "choose --batch / --grad-accum" : "choose --batch";
  const int64_t tokens = int64_t{Bm} * T;
  if (layout == "1d" && sequence_parallel && tokens % world.size() != 0) {
    throw core::ConfigError("sequence parallelism splits the B·T = " + std::to_string(tokens) +
                            " tokens of a batch over the p = " + std::to_string(world.size()) + " ranks, but " +
                            std::to_string(tokens) + " is not divisible by " + std::to_string(world.size()) + "; " +
                            choose + " and --seq whose product is a multiple of " + std::to_string(world.size()));
  }
  if (layout != "2d") return;
  const int q = comm::Grid2D::side(world.size());
  if (Bm % q != 0) {
    throw core::ConfigError("the 2D layout splits the batch over the q = " + std::to_string(q) +
                            " rows of the grid, but " + batch + " is not divisible by " + std::to_string(q) + "; " +
                            choose + " a multiple of " + std::to_string(q));
  }
}

/// The same on the CPU, recording into the process's host ledger.
template <typename Body>
int with_model(const std::string& layout, const model::GPTConfig& config, uint32_t seed, comm::World& world,
               Body&& body) {
  return with_model(layout, config, seed, world, core::cpu_context(), std::forward<Body>(body));
}

}  // namespace optimus::train
